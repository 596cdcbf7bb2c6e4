package sandboxaudit

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestReaderBounds(t *testing.T) {
	if ReceiveBufferBytes != 1<<20 || StatusTimeout != 2*time.Second || readLogGroup != 1 {
		t.Fatalf("bounds changed: %d %v %d", ReceiveBufferBytes, StatusTimeout, readLogGroup)
	}
}

// TestReaderStopsWithItsContext: a reader whose context ends stops
// reading (Running false, Wait answers) without Close.
func TestReaderStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r, err := Start(ctx, os.Getpid())
	if err != nil {
		t.Skipf("audit read-log unavailable: %v", err)
	}
	if !r.Running() {
		t.Fatal("not running after Start")
	}
	cancel()
	<-r.done
	if r.Running() {
		t.Error("running after its context ended")
	}
	if err := r.Wait(context.Background(), 1); err == nil {
		t.Error("Wait on a stopped reader succeeded")
	}
	if ok, err := r.Observed(); ok || err == nil {
		t.Errorf("a stopped reader observed: %v %v", ok, err)
	}
	r.Close()
}
