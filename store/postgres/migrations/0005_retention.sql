-- Retention scans each universe's catalog in (touched_at, digest) order,
-- from a cursor, up to the grace cutoff.
CREATE INDEX blobs_touched ON blobs (universe, touched_at, digest);
