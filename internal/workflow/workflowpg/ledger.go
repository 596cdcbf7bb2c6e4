package workflowpg

import (
	"context"
	"errors"
	"time"

	"github.com/webcodex/webcodex/internal/pgdb"
)

// A Ledger is the whole Workflow Session ledger of one replica: the
// session Store and the message Board over the same schema, as
// workflowdb.Store is on SQLite.
type Ledger struct {
	*Store
	*Board
}

// OpenLedger opens the Store and the Board in db (migrating the schema);
// now may be nil. The caller owns db.
func OpenLedger(ctx context.Context, db *pgdb.DB, now func() time.Time) (*Ledger, error) {
	st, err := Open(ctx, db, now)
	if err != nil {
		return nil, err
	}
	b, err := OpenBoard(ctx, db)
	if err != nil {
		return nil, errors.Join(err, st.Close())
	}
	return &Ledger{Store: st, Board: b}, nil
}

// Flush returns once every write queued before it, on the ledger and on
// the board, has committed.
func (l *Ledger) Flush(ctx context.Context) error {
	return errors.Join(l.Store.Flush(ctx), l.Board.Flush(ctx))
}

// Close commits the queued board writes, then the ledger's, and leaves.
func (l *Ledger) Close() error {
	return errors.Join(l.Board.Close(), l.Store.Close())
}
