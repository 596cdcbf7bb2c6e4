-- The tree index (docs/decisions/0022-evidence-tree-nodes.md): derived
-- from the records, written in the transaction of each append, never
-- trusted by `evidence verify` (which compares it with the tree it rebuilds).
-- tree_nodes holds every completed interior node (level >= 1; leaves are
-- records.leaf_hash); tree_state the compact range at the journal's size.
-- Journals from before this migration get both built at their next open.
CREATE TABLE tree_nodes (
    level INTEGER NOT NULL,
    idx   INTEGER NOT NULL,
    hash  BLOB NOT NULL,
    PRIMARY KEY (level, idx)
) WITHOUT ROWID;
CREATE TABLE tree_state (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    size   INTEGER NOT NULL,
    hashes BLOB NOT NULL
);
