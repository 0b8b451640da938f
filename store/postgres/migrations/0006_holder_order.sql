-- blobs/holders lists the holders of one blob, each kind sorted and cut at
-- a limit. Holder indexes that end with the sort key make each list a
-- bounded range read, however many sessions, workspaces or parent blobs
-- hold a blob (a shared file under every snapshot, a prompt rooted by
-- every session). Each replaces the index it extends: the retention
-- probes and the blob foreign-key checks use its leading columns alone.

CREATE INDEX session_roots_digest_session ON session_roots (universe, digest, session_id);
DROP INDEX session_roots_digest;

CREATE INDEX retention_edges_child_parent ON retention_edges (universe, child, parent);
DROP INDEX retention_edges_child;

CREATE INDEX workspaces_head_name ON workspaces (universe, head, name);
DROP INDEX workspaces_head;

CREATE INDEX checkpoints_digest_session ON checkpoints (universe, digest, session_id, seq);
DROP INDEX checkpoints_digest;
