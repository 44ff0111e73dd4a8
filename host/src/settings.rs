//! The host's tuning settings from the environment (`LID_*` numbers): each named once,
//! with its default and the range it takes. `lid serve` checks every one before it opens
//! the database ([`check`]), so a typo or a value out of range stops the start, saying
//! what is allowed, where it used to run silently on the default (and
//! `LID_CHECKPOINT_MS=0` spun a core checkpointing an idle database without pause).
//! Elsewhere (the CLI's own engine calls) a setting that does not read is its default.

use std::ops::RangeInclusive;

/// One numeric setting.
pub struct Setting {
    pub name: &'static str,
    pub default: u64,
    pub range: RangeInclusive<u64>,
    /// What the number counts, for the refusal's message.
    pub unit: &'static str,
}

/// How often `lid serve` checkpoints its WAL. Each round ends with a short copy that
/// holds the writer (and so the audit commits) back, and it lasts longer the more was
/// written since the last round: under load, every 500 ms gave recall latencies a p99 of
/// 4.2–5.8 ms (stalls of up to 12 ms), every 50 ms 3.0 ms, at the same CPU per recall (10 s
/// runs of the load example).
pub const CHECKPOINT_MS: Setting = Setting { name: "LID_CHECKPOINT_MS", default: 50, range: 1..=60_000, unit: "milliseconds" };
/// How long the audit writer waits for more rows under load; 0 turns it off.
pub const AUDIT_LINGER_US: Setting = Setting { name: "LID_AUDIT_LINGER_US", default: 500, range: 0..=100_000, unit: "microseconds" };
/// The agents' snapshots kept in memory.
pub const SNAPSHOT_CACHE_MB: Setting = Setting { name: "LID_SNAPSHOT_CACHE_MB", default: 256, range: 0..=1_048_576, unit: "MiB" };
/// The derived blobs (ranker indexes) kept in memory.
pub const DERIVED_CACHE_MB: Setting = Setting { name: "LID_DERIVED_CACHE_MB", default: 256, range: 0..=1_048_576, unit: "MiB" };
/// What a pooled engine slot keeps resident between calls.
pub const KEEP_RESIDENT_MIB: Setting = Setting { name: "LID_KEEP_RESIDENT_MIB", default: 16, range: 0..=65_536, unit: "MiB" };

/// Every setting [`check`] checks.
pub const ALL: &[&Setting] = &[&CHECKPOINT_MS, &AUDIT_LINGER_US, &SNAPSHOT_CACHE_MB, &DERIVED_CACHE_MB, &KEEP_RESIDENT_MIB];

impl Setting {
    /// The setting's value: its default when unset, else a whole number in its range.
    pub fn read(&self) -> Result<u64, String> {
        self.parse(std::env::var(self.name).ok().as_deref())
    }

    fn parse(&self, value: Option<&str>) -> Result<u64, String> {
        let Some(v) = value else { return Ok(self.default) };
        v.trim().parse::<u64>().ok().filter(|n| self.range.contains(n)).ok_or_else(|| {
            format!("{} must be a whole number of {} from {} to {} (default {}), not {v:?}", self.name, self.unit, self.range.start(), self.range.end(), self.default)
        })
    }

    /// [`Setting::read`], or the default when the value does not read.
    pub fn get(&self) -> u64 {
        self.read().unwrap_or(self.default)
    }
}

/// Every setting's value, or what is wrong with the first that does not read.
pub fn check() -> Result<(), String> {
    ALL.iter().try_for_each(|s| s.read().map(drop))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_is_its_default_unset_and_refused_out_of_range_or_unreadable() {
        assert_eq!(CHECKPOINT_MS.parse(None), Ok(50));
        assert_eq!(CHECKPOINT_MS.parse(Some(" 200 ")), Ok(200));
        assert_eq!(CHECKPOINT_MS.parse(Some("1")), Ok(1));
        assert_eq!(CHECKPOINT_MS.parse(Some("60000")), Ok(60_000));
        for bad in ["0", "60001", "50ms", "-1", "1.5", ""] {
            let e = CHECKPOINT_MS.parse(Some(bad)).unwrap_err();
            assert!(e.contains("LID_CHECKPOINT_MS must be a whole number of milliseconds from 1 to 60000"), "{bad}: {e}");
        }
        // 0 is the documented "off" of the audit linger
        assert_eq!(AUDIT_LINGER_US.parse(Some("0")), Ok(0));
        // a cache of 2^44 MiB would overflow the byte count
        assert!(SNAPSHOT_CACHE_MB.parse(Some("17592186044416")).is_err());
    }
}
