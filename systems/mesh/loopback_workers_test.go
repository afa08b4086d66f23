package mesh

// newLoopbackWorkers returns a loopback that delivers on workers
// goroutines: messages of one subject stay in order on one worker, and
// Publish returns once the message is queued. Drain waits for delivery.
func newLoopbackWorkers(f Faults, workers int) *Loopback {
	l := NewLoopback(f)
	l.done = make(chan struct{})
	for range workers {
		q := make(chan queued, 4096)
		l.queues = append(l.queues, q)
		go l.work(q)
	}
	return l
}

func (l *Loopback) work(q chan queued) {
	for {
		select {
		case it := <-q:
			l.deliver(it.ctx, it.m)
			l.pending.Done()
		case <-l.done:
			return
		}
	}
}

// Drain waits until every queued message has been delivered.
func (l *Loopback) Drain() { l.pending.Wait() }
