package pgdb

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A Pipeline collects a transaction's writes whose results nothing reads
// until they are sent, to send them in one round trip (a pgx batch) when
// the transaction next needs a result or ends. A write the database
// refuses fails the Flush that sends it, and so the transaction. The zero
// value is empty and ready.
type Pipeline struct{ q pgx.Batch }

// Exec queues sql.
func (p *Pipeline) Exec(sql string, args ...any) { p.q.Queue(sql, args...) }

// ExecChecked queues sql; check judges its command tag when it is sent
// (its error fails the Flush).
func (p *Pipeline) ExecChecked(check func(pgconn.CommandTag) error, sql string, args ...any) {
	p.q.Queue(sql, args...).Exec(check)
}

// Len is the number of writes queued.
func (p *Pipeline) Len() int { return p.q.Len() }

// Flush sends the queued writes in tx and waits for them; the pipeline is
// empty after, whatever the outcome.
func (p *Pipeline) Flush(ctx context.Context, tx pgx.Tx) error {
	if p.q.Len() == 0 {
		return nil
	}
	q := p.q
	p.q = pgx.Batch{}
	return tx.SendBatch(ctx, &q).Close()
}
