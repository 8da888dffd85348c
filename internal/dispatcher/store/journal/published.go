package journal

// Published is the sequence number of the run's last event published to
// readers (0 when none). An Events iterator that yielded event n yields the
// next one without waiting when Published() > n: a stream that writes its
// events to a client flushes only when it has caught up, so events appended
// together reach the client in one write.
func (r *Run) Published() int64 {
	rs := r.rs
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.lastSeq
}
