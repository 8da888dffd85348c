//go:build postgres

package pgstore

// MigrationLock is the advisory lock key migrate takes, for the tests that
// hold it themselves or watch who holds it and who waits for it.
const MigrationLock = migrationLock

// MigrationNames are the embedded migrations' file names in version order:
// version i+1 is the i-th.
func MigrationNames() ([]string, error) {
	all, err := loadMigrations()
	if err != nil {
		return nil, err
	}
	names := make([]string, len(all))
	for i, m := range all {
		names[i] = m.name
	}
	return names, nil
}
