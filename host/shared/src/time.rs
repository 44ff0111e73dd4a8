//! Unix milliseconds as the ISO 8601 UTC timestamps the APIs print (seconds precision).

/// `ms` since the Unix epoch as `2026-05-04T12:00:00Z` (negative clamps to the epoch).
pub fn iso(ms: i64) -> String {
    let secs = ms.max(0) / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::iso;

    #[test]
    fn iso_dates() {
        assert_eq!(iso(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso(-5), "1970-01-01T00:00:00Z");
        assert_eq!(iso(1_777_896_000_000), "2026-05-04T12:00:00Z");
        assert_eq!(iso(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(iso(1_767_225_599_999), "2025-12-31T23:59:59Z");
        assert_eq!(iso(4_102_444_800_000), "2100-01-01T00:00:00Z");
    }

    /// A century year that is not a leap year (2100, 2200) has no 29 February: the second
    /// after its 28th is 1 March, where the algorithm's own year turns (it counts from March).
    #[test]
    fn february_of_a_century_year_that_is_not_leap_ends_on_the_28th() {
        assert_eq!(iso(4_107_542_399_000), "2100-02-28T23:59:59Z");
        assert_eq!(iso(4_107_542_400_000), "2100-03-01T00:00:00Z");
        assert_eq!(iso(7_263_216_000_000), "2200-03-01T00:00:00Z");
        assert_eq!(iso(951_868_800_000), "2000-03-01T00:00:00Z");
    }
}
