package finish

// ParseStatusPathsForTest exposes parseStatus to the external tests.
func ParseStatusPathsForTest(out string) (paths, conflicts []string, dirty, conflicted bool) {
	s := parseStatus(out)
	return s.Paths, s.Conflicts, s.Dirty, s.Conflicted
}
