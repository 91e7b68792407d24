//! `/metrics`: the server's counters and gauges in Prometheus's text
//! exposition (OpenMetrics), kept and written by `prometheus-client`.

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// An HTTP answer's status, as a label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Code {
    code: u16,
}

/// What `/metrics` reports; each is shared with the registry that writes
/// it.
pub struct Metrics {
    registry: Registry,
    pub appended: Counter,
    pub present: Counter,
    pub refused: Counter,
    pub unreadable: Counter,
    /// Entries in the log at the last append.
    pub size: Gauge,
    /// Bytes of request bodies held now, set as they are written.
    held: Gauge,
    responses: Family<Code, Counter>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        let mut registry = Registry::default();
        let m = Metrics {
            appended: Counter::default(),
            present: Counter::default(),
            refused: Counter::default(),
            unreadable: Counter::default(),
            size: Gauge::default(),
            held: Gauge::default(),
            responses: Family::default(),
            registry: Registry::default(),
        };
        registry.register(
            "chit_entries_appended",
            "Submissions appended",
            m.appended.clone(),
        );
        registry.register(
            "chit_entries_present",
            "Submissions already in the log",
            m.present.clone(),
        );
        registry.register(
            "chit_entries_refused",
            "Submissions refused as invalid",
            m.refused.clone(),
        );
        registry.register(
            "chit_entries_unreadable",
            "Submissions that could not be read",
            m.unreadable.clone(),
        );
        registry.register(
            "chit_log_size",
            "Entries in the log at the last append",
            m.size.clone(),
        );
        registry.register(
            "chit_request_bytes_held",
            "Bytes of request bodies held now (at most --max-in-flight)",
            m.held.clone(),
        );
        registry.register(
            "chit_http_responses",
            "HTTP responses by status",
            m.responses.clone(),
        );
        Metrics { registry, ..m }
    }
}

impl Metrics {
    /// One more answer of `status`.
    pub fn answered(&self, status: u16) {
        self.responses.get_or_create(&Code { code: status }).inc();
    }

    /// The exposition, with the bytes of request bodies held now.
    pub fn text(&self, held: usize) -> String {
        self.held.set(i64::try_from(held).unwrap_or(i64::MAX));
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

/// A count as a gauge's value.
pub fn gauge_value(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each series as Prometheus reads it: counters as `_total`, the
    /// answers by status as a label, the bytes held as given, the end
    /// marked.
    #[test]
    fn the_exposition_holds_every_series() {
        let m = Metrics::default();
        m.appended.inc();
        m.appended.inc();
        m.size.set(gauge_value(2));
        m.answered(201);
        m.answered(201);
        m.answered(431);
        let text = m.text(1024);
        for line in [
            "# TYPE chit_entries_appended counter",
            "chit_entries_appended_total 2",
            "chit_entries_refused_total 0",
            "chit_log_size 2",
            "chit_request_bytes_held 1024",
            "chit_http_responses_total{code=\"201\"} 2",
            "chit_http_responses_total{code=\"431\"} 1",
            "# EOF",
        ] {
            assert!(text.lines().any(|l| l == line), "{line}: {text}");
        }
    }
}
