package proc

// WaitEarlySignals waits until EarlySignals' registration is in place.
func WaitEarlySignals() {
	early.Lock()
	s := early.s
	early.Unlock()
	<-s.ready
}
