package workflow_test

import (
	"testing"

	"github.com/webcodex/webcodex/internal/workflow"
)

// TestLocalNotifier: a Notify wakes every current subscriber of that
// session only, a later subscription waits for the next Notify, and ending
// a subscription twice is harmless.
func TestLocalNotifier(t *testing.T) {
	n := workflow.NewLocalNotifier()
	a, cancelA := n.Subscribe("s1")
	b, cancelB := n.Subscribe("s1")
	other, cancelOther := n.Subscribe("s2")
	defer cancelOther()
	n.Notify("s1")
	for _, ch := range []<-chan struct{}{a, b} {
		select {
		case <-ch:
		default:
			t.Fatal("a subscriber of s1 was not woken")
		}
	}
	select {
	case <-other:
		t.Fatal("a Notify of s1 woke s2")
	default:
	}
	cancelA()
	cancelA()
	cancelB()
	c, cancelC := n.Subscribe("s1")
	defer cancelC()
	select {
	case <-c:
		t.Fatal("a new subscription saw an earlier Notify")
	default:
	}
	n.Notify("s1")
	<-c
}
