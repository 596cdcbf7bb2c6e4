package app

import (
	"context"
	"fmt"
	"github.com/webcodex/webcodex/internal/agenttask/agenttaskpg"
	"github.com/webcodex/webcodex/internal/intent/intentpg"
	"os"
	"path/filepath"
	"time"

	"github.com/webcodex/webcodex/internal/audit/auditpg"
	"github.com/webcodex/webcodex/internal/auth/authpg"
	"github.com/webcodex/webcodex/internal/dbcopy"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencepg"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/goal/goalpg"
	"github.com/webcodex/webcodex/internal/jobs/jobspg"
	"github.com/webcodex/webcodex/internal/memory/memorypg"
	"github.com/webcodex/webcodex/internal/oauth/oauthdb"
	"github.com/webcodex/webcodex/internal/oauth/oauthpg"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/project/projectpg"
	"github.com/webcodex/webcodex/internal/readset/readsetpg"
	"github.com/webcodex/webcodex/internal/window/windowpg"
	"github.com/webcodex/webcodex/internal/workflow/workflowpg"
)

// MigrationResult is one table `webcodex migrate` copied: its rows and
// their digest, the same in the data directory and in the database.
type MigrationResult = dbcopy.Result

// migrationPlan is every table of a data directory and its PostgreSQL
// table; the SQLite bookkeeping tables (schema_migrations, FTS5 shadow
// tables) have no counterpart and are not listed.
func migrationPlan(dataDir string, watermark int64) []dbcopy.Table {
	plan := []dbcopy.Table{
		// The ledger. Its evidence outbox is not copied: Migrate journals
		// it first (its rows are then in the journal's records), and the
		// read marks count reads of processes of this data directory.
		{File: WorkflowDB, From: "sessions", To: "workflow.sessions", Key: []string{"session_id"}},
		{File: WorkflowDB, From: "events", To: "workflow.events", Key: []string{"session_id", "seq"}},
		{File: WorkflowDB, From: "discarded_rows", To: "workflow.discarded_rows", Key: []string{"id"}},
		// A call open in the data directory was cut off when its server
		// stopped: its instance never joins the database, so the first
		// replica records it outcome_unknown.
		{File: WorkflowDB, From: "open_calls", To: "workflow.open_calls", Key: []string{"session_id", "call_id"}},
		{File: WorkflowDB, From: "server_keys", To: "workflow.server_keys", Key: []string{"name"}},
		{File: WorkflowDB, From: "message_boards", To: "workflow.message_boards", Key: []string{"session_id"}},
		{File: WorkflowDB, From: "messages", To: "workflow.messages", Key: []string{"session_id", "message_id"}},
		// The evidence journal, leaf for leaf: the same indexes, tree
		// nodes, head and signed checkpoints.
		{File: EvidenceDB, From: "records", To: "evidence.records", Key: []string{"idx"}},
		{File: EvidenceDB, From: "checkpoints", To: "evidence.checkpoints", Key: []string{"id"}},
		{File: EvidenceDB, From: "tree_nodes", To: "evidence.tree_nodes", Key: []string{"level", "idx"}},
		// The purge log: without it, verify reports a purged record unlogged_purge.
		{File: EvidenceDB, From: "purges", To: "evidence.purges", Key: []string{"id"}},
		{File: EvidenceDB, From: "tree_state", To: "evidence.head", Key: []string{"id"}, Set: map[string]any{"outbox_watermark": watermark}},
		// seq is audit.db's order of sessions created in one instant (its
		// rowid) and of events (their key).
		{File: AuditDB, From: "action_sessions", To: "audit.action_sessions", Key: []string{"session_id"}, Rename: map[string]string{"rowid": "seq"}},
		{File: AuditDB, From: "action_events", To: "audit.action_events", Key: []string{"seq"}},
		{File: AuditDB, From: "window_session_relations", To: "audit.window_session_relations", Key: []string{"window_principal", "client_window", "session_id", "kind"}},
		{File: AuthDB, From: "tokens", To: "auth.tokens", Key: []string{"id"}},
		{File: AuthDB, From: "console_sessions", To: "auth.console_sessions", Key: []string{"session_hash"}},
		{File: ProjectsDB, From: "projects", To: "projects.projects", Key: []string{"id"}},
		{File: ProjectsDB, From: "runners", To: "projects.runners", Key: []string{"client_id"}},
		{File: JobsDB, From: "jobs", To: "jobs.jobs", Key: []string{"job_id"}},
		{File: GoalsDB, From: "goals", To: "goals.goals", Key: []string{"id"}},
		// rowid orders a session's associations made in one millisecond.
		{File: GoalsDB, From: "goal_sessions", To: "goals.goal_sessions", Key: []string{"goal_id", "session_id"}, Rename: map[string]string{"rowid": "seq"}},
		{File: WindowDB, From: "window_activity", To: "windows.window_activity", Key: []string{"principal", "window", "project"}, Rename: map[string]string{"window": "win"}},
		{File: WindowDB, From: "peer_messages", To: "windows.peer_messages", Key: []string{"id"}, Rename: map[string]string{"rowid": "seq"}},
		{File: MemoryDB, From: "memory_scopes", To: "memory.scopes", Key: []string{"scope_id"}},
		{File: MemoryDB, From: "memory_entries", To: "memory.entries", Key: []string{"id"}},
		{File: MemoryDB, From: "memory_history", To: "memory.history", Key: []string{"memory_id", "generation"}},
		{File: TasksDB, From: "tasks", To: "tasks.tasks", Key: []string{"id"}},
		{File: TasksDB, From: "task_labels", To: "tasks.task_labels", Key: []string{"task_id", "label"}},
		{File: TasksDB, From: "task_deps", To: "tasks.task_deps", Key: []string{"task_id", "dep_id"}},
		{File: TasksDB, From: "attempts", To: "tasks.attempts", Key: []string{"id"}},
		// The feeds and the events token key: a token issued on the data
		// directory stays valid on the database.
		{File: TasksDB, From: "task_feed", To: "tasks.task_feed", Key: []string{"owner", "project"}},
		{File: TasksDB, From: "task_keys", To: "tasks.task_keys", Key: []string{"name"}},
		{File: IntentsDB, From: "intents", To: "intents.intents", Key: []string{"session_id"}},
		{File: IntentsDB, From: "notices", To: "intents.notices", Key: []string{"recipient", "other_session"}},
		{File: ReadSetsDB, From: "reads", To: "readsets.reads", Key: []string{"session_id", "project", "path"}},
		{File: ReadSetsDB, From: "notices", To: "readsets.notices", Key: []string{"session_id", "project", "path"}},
	}
	if _, err := os.Stat(filepath.Join(dataDir, oauthdb.FileName)); err == nil {
		plan = append(plan,
			dbcopy.Table{File: oauthdb.FileName, From: "clients", To: "oauth.clients", Key: []string{"id"}},
			dbcopy.Table{File: oauthdb.FileName, From: "grants", To: "oauth.grants", Key: []string{"id"}},
			dbcopy.Table{File: oauthdb.FileName, From: "secrets", To: "oauth.secrets", Key: []string{"hash"}})
	}
	return plan
}

// Migrate copies every store of the data directory dataDir into the empty
// PostgreSQL database at url (`webcodex migrate`): the data directory's
// databases are first brought to this version, the database's schemas are
// created, every table is copied in one transaction and verified by count
// and digest. Errors: failure.Conflict when another process serves
// dataDir or the database is not empty (nothing is written to it); those
// of dbcopy.Copy (the database is left as it was).
func Migrate(ctx context.Context, dataDir, url string) ([]MigrationResult, error) {
	if _, err := os.Stat(filepath.Join(dataDir, WorkflowDB)); err != nil {
		return nil, failure.Wrap(failure.NotFound, err, "no WebCodex data directory at %s", dataDir)
	}
	src, err := openFiles(ctx, dataDir)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if src.Workflow.Shared() {
		return nil, failure.New(failure.Conflict, "another process serves %s (a running `webcodex serve` or `webcodex mcp`); stop it, then migrate", dataDir)
	}
	db, err := pgdb.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if err := requireEmpty(ctx, db); err != nil {
		return nil, err
	}
	if err := createSchemas(ctx, db); err != nil {
		return nil, err
	}
	j, fixups, err := journalFixups(ctx, dataDir)
	if err != nil {
		return nil, err
	}
	res, err := dbcopy.Copy(ctx, db, dataDir, migrationPlan(dataDir, j.watermark), fixups)
	if err != nil {
		return nil, fmt.Errorf("migrate %s to %s: %w", dataDir, db.URL(), err)
	}
	return res, nil
}

// requireEmpty refuses a database that holds a row in any table outside
// PostgreSQL's own schemas.
func requireEmpty(ctx context.Context, db *pgdb.DB) error {
	rows, err := db.Pool.Query(ctx, `SELECT table_schema, table_name FROM information_schema.tables
		WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')
		ORDER BY 1, 2`)
	if err != nil {
		return pgdb.StoreError(err, "database")
	}
	var tables []string
	for rows.Next() {
		var s, t string
		if err := rows.Scan(&s, &t); err != nil {
			rows.Close()
			return pgdb.StoreError(err, "database")
		}
		if t != "schema_migrations" {
			tables = append(tables, fmt.Sprintf("%q.%q", s, t))
		}
	}
	if err := rows.Err(); err != nil {
		return pgdb.StoreError(err, "database")
	}
	for _, t := range tables {
		var any bool
		if err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+t+`)`).Scan(&any); err != nil {
			return pgdb.StoreError(err, "database")
		}
		if any {
			return failure.New(failure.Conflict, "database %s is not empty (table %s has rows): migrate copies into an empty database only", db.URL(), t)
		}
	}
	return nil
}

// createSchemas creates every store's schema at this version, and nothing
// in them: the copy brings every row.
func createSchemas(ctx context.Context, db *pgdb.DB) error {
	for _, m := range []func(context.Context, *pgdb.DB) error{
		workflowpg.Migrate, auditpg.Migrate, evidencepg.Migrate, authpg.Migrate, oauthpg.Migrate,
		projectpg.Migrate, jobspg.Migrate, goalpg.Migrate, windowpg.Migrate, memorypg.Migrate,
		agenttaskpg.Migrate, intentpg.Migrate, readsetpg.Migrate,
	} {
		if err := m(ctx, db); err != nil {
			return err
		}
	}
	return nil
}

// sourceJournal is what the copy needs of the data directory's journal.
type sourceJournal struct {
	id, origin string
	watermark  int64
}

// journalFixups journals the data directory's evidence outbox (as its
// next start would) and returns the statements that give the database the
// journal's identity, its outbox watermark (the ledger's next outbox
// sequence continues above it) and the public keys of its earlier signing
// keys (evidence.pub), so that `webcodex evidence verify` checks every
// copied checkpoint.
func journalFixups(ctx context.Context, dataDir string) (sourceJournal, []dbcopy.Statement, error) {
	j, _, err := OpenJournal(ctx, Config{DataDir: dataDir})
	if err != nil {
		return sourceJournal{}, nil, fmt.Errorf("the data directory's evidence journal: %w", err)
	}
	applied, _ := j.Watermarks()
	src := sourceJournal{id: j.JournalID(), origin: j.Origin(), watermark: applied}
	if err := j.Close(); err != nil {
		return sourceJournal{}, nil, err
	}
	fixups := []dbcopy.Statement{
		{SQL: `INSERT INTO evidence.journal (id, journal_id, origin) VALUES (1, $1, $2)`, Args: []any{src.id, src.origin}},
		// An empty journal has no tree state to copy.
		{SQL: `INSERT INTO evidence.head (id, size, hashes, outbox_watermark) VALUES (1, 0, '', $1) ON CONFLICT (id) DO NOTHING`, Args: []any{applied}},
		{SQL: `UPDATE workflow.outbox_head SET next_seq = $1`, Args: []any{applied + 1}},
	}
	vkeys, err := evidence.LoadPublicKeys(dataDir)
	if err != nil {
		return sourceJournal{}, nil, err
	}
	for _, vk := range vkeys {
		ks, err := evidence.NewKeySet(vk)
		if err != nil {
			return sourceJournal{}, nil, err
		}
		fixups = append(fixups, dbcopy.Statement{
			SQL:  `INSERT INTO evidence.public_keys (key_id, verifier_key, added_at_ns) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			Args: []any{ks.IDs()[0], vk, time.Now().UnixNano()}})
	}
	return src, fixups, nil
}
