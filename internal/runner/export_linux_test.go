package runner

// OnConfinedThread sets the hook that learns each confined start thread's
// id and returns a function restoring the previous hook.
func OnConfinedThread(f func(tid int)) (restore func()) {
	prev := onConfinedThread
	onConfinedThread = f
	return func() { onConfinedThread = prev }
}

// OnCompiled sets the hook that learns of each ruleset compiled and
// returns a function restoring the previous hook.
func OnCompiled(f func()) (restore func()) {
	prev := onCompiled
	onCompiled = f
	return func() { onCompiled = prev }
}

// PeekZombie is peekZombie: the pid of a zombie child, not reaped.
var PeekZombie = peekZombie
