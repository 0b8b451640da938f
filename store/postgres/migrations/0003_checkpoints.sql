-- Reducer checkpoints: the state of a session after a seq, as a blob of
-- core.EncodeCheckpoint bytes. The log stays authoritative; a checkpoint
-- only saves replaying the events before it. A checkpoint row is a holder:
-- its foreign key to blobs makes a collector's DELETE of the blob fail, as
-- for session_roots and workspace heads. Deleting the session drops its
-- checkpoints and releases their blobs.

CREATE TABLE checkpoints (
    universe      text COLLATE "C" NOT NULL,
    session_id    text COLLATE "C" NOT NULL,
    seq           bigint NOT NULL CHECK (seq > 0),
    digest        bytea  NOT NULL, -- SHA-256 of the checkpoint blob
    created_at_ms bigint NOT NULL,
    PRIMARY KEY (universe, session_id, seq),
    FOREIGN KEY (universe, session_id) REFERENCES sessions ON DELETE CASCADE,
    FOREIGN KEY (universe, digest) REFERENCES blobs (universe, digest)
);
-- Retention (and a blob DELETE's foreign key check) asks whether any
-- checkpoint points at a digest.
CREATE INDEX checkpoints_digest ON checkpoints (universe, digest);
