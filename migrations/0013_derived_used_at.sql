-- When each derived blob (a ranker index) was last used, so that `lid serve` can delete
-- the ones no recall has read for a while (README, "Retention"): every unit write gives
-- its agent a new index at the next recall, and the old ones were kept for good. A blob
-- with no `used_at` counts as used when it was made (`created_at`). The worker keeps its
-- indexes in memory only; the column is there for the one schema both hosts share.
-- Plain SQLite SQL that Cloudflare D1 also accepts.
ALTER TABLE derived_blobs ADD COLUMN used_at INTEGER;
CREATE INDEX IF NOT EXISTS idx_derived_used ON derived_blobs (coalesce(used_at, created_at));
