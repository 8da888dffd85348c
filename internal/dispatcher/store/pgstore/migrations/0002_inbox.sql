-- Run inboxes (store.Store's Post and Inbox): answers posted through any
-- dispatcher for the one that owns the run's turn. A message goes with its
-- run (forgotten, or its session deleted) and with its payload (pruned).
CREATE TABLE inbox (
    run     bigint NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq     bigint NOT NULL,  -- 1, 2, … per run
    kind    text NOT NULL,
    key     text NOT NULL,
    at      timestamptz NOT NULL,
    payload bytea,
    PRIMARY KEY (run, seq),
    UNIQUE (run, kind, key)   -- one answer per request
);
