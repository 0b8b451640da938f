-- The hosted store's schema. Every data table keys on universe first, and
-- every query filters by it: one tenant's rows are never read through
-- another's store. Identifiers and ids compare as bytes (COLLATE "C") so
-- ordering matches the other backends whatever the database locale is.

CREATE TABLE universes (
    slug       text COLLATE "C" PRIMARY KEY
               CHECK (slug ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$'),
    created_at timestamptz NOT NULL
);

-- Only the SHA-256 of each API key is kept; the key itself is shown once.
CREATE TABLE api_keys (
    key_hash   bytea PRIMARY KEY CHECK (length(key_hash) = 32),
    universe   text COLLATE "C" NOT NULL REFERENCES universes (slug),
    created_at timestamptz NOT NULL
);
CREATE INDEX api_keys_universe ON api_keys (universe);

-- The lifecycle projection of each session, updated in the append's
-- transaction; its row is also the lock appenders to one session queue on.
CREATE TABLE sessions (
    universe       text COLLATE "C" NOT NULL REFERENCES universes (slug),
    session_id     text COLLATE "C" NOT NULL,
    head           bigint  NOT NULL CHECK (head > 0),
    status         text    NOT NULL,
    has_unfinished boolean NOT NULL, -- core.Lifecycle.Unfinished()
    created_at_ms  bigint  NOT NULL,
    updated_at_ms  bigint  NOT NULL,
    lifecycle      jsonb   NOT NULL, -- core.Lifecycle, the projection itself
    PRIMARY KEY (universe, session_id)
);
CREATE INDEX sessions_unfinished ON sessions (universe, session_id) WHERE has_unfinished;

CREATE TABLE events (
    universe       text COLLATE "C" NOT NULL,
    session_id     text COLLATE "C" NOT NULL,
    seq            bigint NOT NULL CHECK (seq > 0),
    observed_at_ms bigint NOT NULL,
    kind           text   NOT NULL,
    version        bigint NOT NULL,
    joins          text[],          -- NULL when the event has none
    payload        bytea  NOT NULL, -- the proposal's JSON, byte for byte
    PRIMARY KEY (universe, session_id, seq),
    FOREIGN KEY (universe, session_id) REFERENCES sessions ON DELETE CASCADE
);

-- The blob catalog. Bodies up to 64 KiB live inline; larger ones in object
-- storage under object_key, which names one upload (universe, digest and a
-- random upload id), so deleting an old upload never touches a newer one.
CREATE TABLE blobs (
    universe   text COLLATE "C" NOT NULL REFERENCES universes (slug),
    digest     bytea  NOT NULL CHECK (length(digest) = 32), -- SHA-256
    size       bigint NOT NULL CHECK (size >= 0),
    inline     bytea,
    object_key text COLLATE "C",
    created_at timestamptz NOT NULL,
    touched_at timestamptz NOT NULL, -- last put; the collector's grace counts from it
    PRIMARY KEY (universe, digest),
    CHECK ((inline IS NULL) <> (object_key IS NULL)),
    CHECK (inline IS NULL OR (length(inline) = size AND size <= 65536))
);
-- Blob bodies are mostly incompressible: skip the compression attempt.
ALTER TABLE blobs ALTER COLUMN inline SET STORAGE EXTERNAL;

-- Holders. The foreign keys to blobs are what make a holder binding: a
-- collector's DELETE of a held blob fails (or waits for the holder's
-- transaction and then fails) instead of racing it.
CREATE TABLE session_roots (
    universe   text COLLATE "C" NOT NULL,
    session_id text COLLATE "C" NOT NULL,
    digest     bytea NOT NULL,
    PRIMARY KEY (universe, session_id, digest),
    FOREIGN KEY (universe, session_id) REFERENCES sessions ON DELETE CASCADE,
    FOREIGN KEY (universe, digest) REFERENCES blobs (universe, digest)
);
CREATE INDEX session_roots_digest ON session_roots (universe, digest);

-- parent → child: deleting a parent releases its edges; deleting a child
-- that an edge still points at fails.
CREATE TABLE retention_edges (
    universe text COLLATE "C" NOT NULL,
    parent   bytea NOT NULL,
    child    bytea NOT NULL,
    PRIMARY KEY (universe, parent, child),
    CHECK (parent <> child),
    FOREIGN KEY (universe, parent) REFERENCES blobs (universe, digest) ON DELETE CASCADE,
    FOREIGN KEY (universe, child) REFERENCES blobs (universe, digest)
);
CREATE INDEX retention_edges_child ON retention_edges (universe, child);
