package capability

import "slices"

// Profiles returns the table, in order (for the tests of package
// capability_test).
func Profiles() []Profile { return slices.Clone(profiles) }
