package workflow

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
)

// ledgerDoc returns an indented version-2 ledger of the given rows.
func ledgerDoc(t *testing.T, rows ...LedgerRow) string {
	t.Helper()
	b, err := json.MarshalIndent(Ledger{Version: LedgerVersion, Kind: LedgerKind, Sessions: rows}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ledgerRow(i int) LedgerRow {
	s := markerSession()
	s.ID = fmt.Sprintf("wc_sess_%032x", i)
	s.EventsObserved = 1
	return LedgerRow{Session: s, Events: []Event{{Seq: 1, At: s.CreatedAt, Kind: EventTaskInstruction, Text: strings.Repeat("x", 100*i)}}}
}

// TestLedgerReaderBoundsRow reads a ledger whose second row is longer than
// the reader's row bound: the first row is returned, the second refused by
// its index, and the reader never buffers it whole.
func TestLedgerReaderBoundsRow(t *testing.T) {
	doc := ledgerDoc(t, ledgerRow(1), ledgerRow(40))
	lr := NewLedgerReader(strings.NewReader(doc))
	lr.rowMax = 2048 // row 1 is about 700 bytes, row 2 about 4,600
	if r, err := lr.Next(); err != nil || r.ID != ledgerRow(1).ID {
		t.Fatalf("row 1: %v", err)
	}
	_, err := lr.Next()
	if failure.KindOf(err) != failure.InvalidLedger || !strings.Contains(err.Error(), "row 2") || !strings.Contains(err.Error(), "longer than 2048 bytes") {
		t.Fatalf("row 2: %v", err)
	}
	if lr.src.n >= int64(len(doc)) {
		t.Fatalf("read all %d bytes of the document to refuse a row", lr.src.n)
	}
	if _, again := lr.Next(); again != err {
		t.Fatalf("error not sticky: %v", again)
	}
}

// TestLedgerReaderLines names the line each row begins on, and a document
// ending after its rows without its closing members is refused after them.
func TestLedgerReaderLines(t *testing.T) {
	doc := ledgerDoc(t, ledgerRow(1), ledgerRow(2), ledgerRow(3))
	lr := NewLedgerReader(strings.NewReader(doc))
	lines := strings.Split(doc, "\n")
	for i := 1; i <= 3; i++ {
		r, err := lr.Next()
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for n, l := range lines {
			if strings.Contains(l, `"session_id": "`+r.ID+`"`) {
				want = n // the line before, 1-based
			}
		}
		if got := fmt.Sprintf("ledger line %d (row %d, session %s)", want, i, r.ID); lr.Where() != got {
			t.Fatalf("Where() = %q, want %q", lr.Where(), got)
		}
	}
	if _, err := lr.Next(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
	cut := doc[:strings.LastIndex(doc, "]")+1]
	lr = NewLedgerReader(strings.NewReader(cut))
	for range 3 {
		if _, err := lr.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lr.Next(); failure.KindOf(err) != failure.InvalidLedger {
		t.Fatalf("document without its closing brace: %v", err)
	}
}
