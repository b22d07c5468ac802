package intake

// CallShares is what a route claim may take of one process's call slots:
// so many calls in all, and for each org and each consumer no more than its
// share of them (DESIGN §18). A consumer that hangs, or an org with a
// backlog, then fills its own share and waits there, never in front of
// another org's calls. The zero value allows nothing; Calls(n) allows n
// with no share.
type CallShares struct {
	// Total is how many calls the claim may take in all.
	Total int
	// Slots is how many calls the process makes at once, and Share what
	// one org may hold of them beside the orgs in Org (internal/fair's
	// ShareOf, so the next org always finds room); either unset: no share
	// per org. Org holds the calls each org has in flight now; an org
	// holding none is not in it.
	Slots int
	Share func(capacity int64, held map[string]int, org string) int64
	Org   map[string]int
	// ConsumerShare is the most calls one consumer may have in flight in
	// the process unless it sets its own max_in_flight (0: no bound);
	// Consumer holds the calls each consumer has in flight now.
	ConsumerShare int
	Consumer      map[string]int
}

// Calls allows n calls with no share: for tools and tests that claim for
// themselves.
func Calls(n int) CallShares { return CallShares{Total: n} }

// Allow returns how many of want calls to consumer (of org, paced by c) the
// shares let a claim take now.
func (s *CallShares) Allow(org, consumer string, c Controls, want int) int {
	n := min(want, s.Total)
	if s.Slots > 0 && s.Share != nil {
		n = min(n, s.OrgShare(org)-s.Org[org])
	}
	if share := s.consumerShare(c); share > 0 {
		n = min(n, share-s.Consumer[consumer])
	}
	return max(n, 0)
}

// Took counts n calls the claim took for consumer of org.
func (s *CallShares) Took(org, consumer string, n int) {
	if n <= 0 {
		return
	}
	s.Total -= n
	if s.Org == nil {
		s.Org = map[string]int{}
	}
	if s.Consumer == nil {
		s.Consumer = map[string]int{}
	}
	s.Org[org] += n
	s.Consumer[consumer] += n
}

// OrgShare is the most calls org may have in flight now.
func (s *CallShares) OrgShare(org string) int {
	return int(s.Share(int64(s.Slots), s.Org, org))
}

// consumerShare is a consumer's bound in this process: its own
// max_in_flight when it sets one, else the default share.
func (s *CallShares) consumerShare(c Controls) int {
	if c.MaxInFlight > 0 {
		return c.MaxInFlight
	}
	return s.ConsumerShare
}
