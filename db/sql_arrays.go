package db

// Go slices passed to statements as PostgreSQL arrays.

// nonNil is s, or an empty slice for nil: pq.StringArray sends nil as NULL, and the
// statements given it (a filter's list, a task's placement tags) want an empty array, not
// NULL. The desired LRPs' filters and the tasks' inserts share it.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
