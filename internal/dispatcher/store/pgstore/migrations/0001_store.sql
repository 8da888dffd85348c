-- The dispatcher's store (internal/dispatcher/store): runs and their events, per-session
-- leases with fencing tokens, transcripts, capacity reservations.

-- Fencing tokens: one sequence for every grant of every session, so a
-- session's tokens only grow, across restarts and session deletions.
CREATE SEQUENCE lease_tokens;

-- The current grant of each session's lease; released grants are deleted.
CREATE TABLE leases (
    session text PRIMARY KEY,
    owner   text NOT NULL,
    token   bigint NOT NULL,
    expires timestamptz NOT NULL
);
CREATE INDEX leases_owner ON leases (owner);

CREATE TABLE runs (
    id          bigserial PRIMARY KEY,
    session     text NOT NULL,
    namespace   text NOT NULL,
    run_id      text NOT NULL,
    digest      bytea NOT NULL,
    requester   jsonb,
    token       bigint NOT NULL,  -- the lease grant the run was claimed under
    writer      text NOT NULL,    -- the Store instance holding its write handle
    state       text NOT NULL,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz,
    last_seq    bigint NOT NULL DEFAULT 0,
    result      bytea,
    reason      text NOT NULL DEFAULT '',
    pruned      boolean NOT NULL DEFAULT false, -- only the tombstone is kept
    bytes       bigint NOT NULL DEFAULT 0,      -- events and result, as retention counts them
    UNIQUE (session, run_id)
);
CREATE INDEX runs_namespace ON runs (namespace);
CREATE INDEX runs_running ON runs (session) WHERE state = 'running';
CREATE INDEX runs_ended ON runs (finished_at) WHERE state <> 'running';

CREATE TABLE events (
    run     bigint NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq     bigint NOT NULL,
    type    text NOT NULL,
    at      timestamptz NOT NULL,
    payload bytea,
    PRIMARY KEY (run, seq)
);

CREATE TABLE transcripts (
    session text PRIMARY KEY,
    size    bigint NOT NULL DEFAULT 0,
    full_   boolean NOT NULL DEFAULT false,
    next    bigint NOT NULL DEFAULT 1
);

CREATE TABLE transcript_lines (
    session text NOT NULL,
    n       bigint NOT NULL,
    line    bytea NOT NULL,
    PRIMARY KEY (session, n)
);

CREATE TABLE reservations (
    server  text NOT NULL,
    session text NOT NULL,
    PRIMARY KEY (server, session)
);
CREATE INDEX reservations_session ON reservations (session);
