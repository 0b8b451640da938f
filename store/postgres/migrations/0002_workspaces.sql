-- Workspaces: named, mutable heads over snapshot manifests, each with a
-- revision that every move increments. A mover locks the row, so two movers
-- from the same revision cannot both win.
-- Snapshot records: manifests recorded as snapshots of the universe.
-- Both are holders: the foreign keys to blobs make a collector's DELETE of a
-- referenced manifest fail, as for session_roots.

CREATE TABLE workspaces (
    universe      text COLLATE "C" NOT NULL REFERENCES universes (slug),
    name          text COLLATE "C" NOT NULL CHECK (name ~ '^[A-Za-z0-9._-]{1,128}$'),
    revision      bigint NOT NULL CHECK (revision > 0),
    head          bytea  NOT NULL, -- SHA-256 of the snapshot manifest
    created_at_ms bigint NOT NULL,
    updated_at_ms bigint NOT NULL,
    PRIMARY KEY (universe, name),
    FOREIGN KEY (universe, head) REFERENCES blobs (universe, digest)
);
-- Retention (and a blob DELETE's foreign key check) asks whether any head
-- points at a digest.
CREATE INDEX workspaces_head ON workspaces (universe, head);

CREATE TABLE snapshots (
    universe      text COLLATE "C" NOT NULL REFERENCES universes (slug),
    manifest      bytea  NOT NULL,
    created_at_ms bigint NOT NULL,
    PRIMARY KEY (universe, manifest),
    FOREIGN KEY (universe, manifest) REFERENCES blobs (universe, digest)
);
