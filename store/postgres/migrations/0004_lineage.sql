-- Lineage and the newest-first listing. A history fork inherits the events
-- 1..fork_at of fork_source and reads them through it: nothing is copied.
-- fork_segments says where its whole inherited prefix is stored (JSON of
-- []store.Segment, resolved through forks of forks when it was created);
-- its own events are the ones under its id. The foreign key keeps a
-- session that forks inherit from: it can only be deleted together with
-- them. A configuration-only clone records only clone_source, which holds
-- nothing.

ALTER TABLE sessions
    ADD COLUMN fork_source   text COLLATE "C",
    ADD COLUMN fork_at       bigint  NOT NULL DEFAULT 0,
    ADD COLUMN fork_depth    integer NOT NULL DEFAULT 0,
    ADD COLUMN fork_segments jsonb,
    ADD COLUMN clone_source  text COLLATE "C",
    ADD CONSTRAINT sessions_fork_source FOREIGN KEY (universe, fork_source) REFERENCES sessions (universe, session_id);

-- Deletion (and the foreign key) asks which forks inherit from a session.
CREATE INDEX sessions_forks ON sessions (universe, fork_source) WHERE fork_source IS NOT NULL;
-- session/list pages newest first.
CREATE INDEX sessions_newest ON sessions (universe, created_at_ms, session_id);
