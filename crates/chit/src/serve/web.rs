//! The page at `/`: one HTML file, two scripts, a style sheet and an icon,
//! compiled into the binary (nothing is fetched from elsewhere). The page
//! reads the same public API as everyone else and writes nothing.
//!
//! Every asset is sent with a Content-Security-Policy that allows only this
//! server's own scripts, styles and requests: a receipt's text is drawn as
//! text, and even markup that slipped through could not run or load
//! anything.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};

const INDEX: &str = include_str!("web/index.html");
const SCRIPT: &str = include_str!("web/app.js");
const VERIFY: &str = include_str!("web/verify.js");
const STYLE: &str = include_str!("web/app.css");
const ICON: &str = include_str!("web/favicon.svg");

const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
     connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut r = body.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    // The assets change only with the binary; a page reload asks again.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

/// `GET /`.
pub async fn index() -> Response {
    asset(INDEX, "text/html; charset=utf-8")
}

/// `GET /assets/app.js`.
pub async fn script() -> Response {
    asset(SCRIPT, "text/javascript; charset=utf-8")
}

/// `GET /assets/verify.js`: what the page checks for itself.
pub async fn verify_script() -> Response {
    asset(VERIFY, "text/javascript; charset=utf-8")
}

/// `GET /assets/app.css`.
pub async fn style() -> Response {
    asset(STYLE, "text/css; charset=utf-8")
}

/// `GET /assets/favicon.svg`.
pub async fn icon() -> Response {
    asset(ICON, "image/svg+xml")
}
