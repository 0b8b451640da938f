-- Where each universe's last bounded collector pass stopped, so the next
-- pass resumes there whichever process leads it.

CREATE TABLE retention_cursors (
    universe   text COLLATE "C" PRIMARY KEY REFERENCES universes (slug),
    touched_at timestamptz NOT NULL,
    digest     bytea NOT NULL CHECK (length(digest) = 32)
);
