//! Paging of the caller's lists (`?limit=&offset=`): one bound and one message for every list route.

use serde::Deserialize;
use utoipa::IntoParams;
use webpilot_core::{ApiError, ErrorCode};

/// Rows a list answers when `limit` is not given.
pub const DEFAULT_LISTED: i64 = 50;
/// The most rows one page may hold.
pub const MAX_LISTED: i64 = 200;

/// `?limit=&offset=` of a list route.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Page {
    /// 1 to 200 (default 50).
    limit: Option<i64>,
    /// At least 0.
    offset: Option<i64>,
}

impl Page {
    /// The page's `(limit, offset)`, or 400 `INVALID_PARAMETER` when either is out of range.
    pub fn bounds(&self) -> Result<(i64, i64), ApiError> {
        let limit = self.limit.unwrap_or(DEFAULT_LISTED);
        let offset = self.offset.unwrap_or(0);
        if !(1..=MAX_LISTED).contains(&limit) || offset < 0 {
            let msg = format!("limit must be 1 to {MAX_LISTED} and offset at least 0");
            return Err(ApiError::new(ErrorCode::InvalidParameter, msg));
        }
        Ok((limit, offset))
    }
}

/// A list's `limit` alone (for lists paged by cursor), or 400 `INVALID_PARAMETER` when out of range.
pub fn limit(asked: Option<i64>) -> Result<i64, ApiError> {
    let limit = asked.unwrap_or(DEFAULT_LISTED);
    if !(1..=MAX_LISTED).contains(&limit) {
        return Err(ApiError::new(ErrorCode::InvalidParameter, format!("limit must be 1 to {MAX_LISTED}")));
    }
    Ok(limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_and_offsets_outside_their_range_are_refused_with_one_message() {
        let page = |limit, offset| Page { limit, offset }.bounds();
        assert_eq!(page(None, None).ok(), Some((DEFAULT_LISTED, 0)));
        assert_eq!(page(Some(200), Some(7)).ok(), Some((200, 7)));
        for (l, o) in [(Some(0), None), (Some(201), None), (None, Some(-1))] {
            let err = page(l, o).err().map(|e| e.message);
            assert_eq!(err.as_deref(), Some("limit must be 1 to 200 and offset at least 0"));
        }
        assert_eq!(limit(None).ok(), Some(50));
        assert!(limit(Some(0)).is_err() && limit(Some(201)).is_err());
    }
}
