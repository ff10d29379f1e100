package transforms

// size returns the entries and bytes held (tests only).
func (c *shardCacheT) size() (int, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m), c.total
}
