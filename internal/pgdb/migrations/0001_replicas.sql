-- The replica processes that have joined the database (pgdb.Join). A live
-- replica holds the session advisory lock lock_key on a connection of its
-- own; the database releases it when that connection ends (the process
-- exited, was killed, or lost the network), so liveness is the database's
-- answer, never a clock. Rows of replicas that are gone are removed by
-- later joins.
CREATE TABLE replicas.members (
    id         text   COLLATE "C" PRIMARY KEY,
    lock_key   bigint NOT NULL UNIQUE,
    joined_at  bigint NOT NULL
);
