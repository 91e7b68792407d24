//! Reading a receipt's fields.

use crate::doc::Val;

pub(crate) fn int(v: Val, key: &str) -> Option<u64> {
    v.get(key)
        .and_then(|x| x.as_i64())
        .and_then(|x| u64::try_from(x).ok())
}

pub(crate) fn text<'d>(v: Val<'d>, key: &str) -> Option<&'d str> {
    v.get(key).and_then(|x| x.as_str())
}
