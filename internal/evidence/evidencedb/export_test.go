package evidencedb

// SetBeforePurgeCommit sets the hook each purge batch runs before its
// commit.
func SetBeforePurgeCommit(fn func()) { beforePurgeCommit = fn }
