-- Readers are shown a run's events up to durable_seq: those a synchronous
-- commit has flushed to the disk (the group commit of appends, the run's
-- end). Appends commit without waiting for their flush, so a crash of the
-- server can lose events above it, which no reader has seen.
ALTER TABLE runs ADD COLUMN durable_seq bigint NOT NULL DEFAULT 0;
-- Readers were shown every committed event until now.
UPDATE runs SET durable_seq = last_seq;
