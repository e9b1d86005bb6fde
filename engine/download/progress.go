package download

import (
	"strconv"
	"time"
)

// Phase is what a download is doing.
type Phase int

const (
	Checking     Phase = iota // reading back a partial file to resume its digest
	Connecting                // waiting for the server's answer
	Transferring              // receiving bytes
	Waiting                   // waiting before a retry (Progress.Err says why)
	Verifying                 // comparing the digest, renaming into place
	Done                      // the file is in place and verified
)

func (p Phase) String() string {
	switch p {
	case Checking:
		return "checking the partial file"
	case Connecting:
		return "connecting"
	case Transferring:
		return "downloading"
	case Waiting:
		return "waiting to retry"
	case Verifying:
		return "verifying"
	case Done:
		return "done"
	}
	return "phase " + strconv.Itoa(int(p))
}

// Progress is a report of how a download stands.
type Progress struct {
	Phase    Phase
	Received int64   // bytes in the partial file
	Total    int64   // bytes expected, 0 when not yet known
	Resumed  int64   // bytes that were already there when this Fetch started
	Rate     float64 // bytes per second over the last few seconds, 0 when unknown
	Attempt  int     // 1 for the first request of this Fetch, then one more per retry
	Err      error   // why the last attempt failed (in the Waiting phase)

	// Approximate: Total is the request's SizeHint, the server has not said the real size yet.
	Approximate bool

	// Discarded counts the bytes of the partial file this Fetch threw away because the server
	// sent the whole file when asked for the rest (it ignores Range requests, or the file
	// changed on it): the download restarted from zero, which a user should be told.
	Discarded int64
}

// Fraction returns the share received, in [0, 1], or 0 when the total is unknown.
func (p Progress) Fraction() float64 {
	if p.Total <= 0 {
		return 0
	}
	return min(float64(p.Received)/float64(p.Total), 1)
}

// Remaining estimates the time left at the current rate, or -1 when it cannot be told.
func (p Progress) Remaining() time.Duration {
	if p.Total <= 0 || p.Rate <= 0 {
		return -1
	}
	left := float64(p.Total-p.Received) / p.Rate
	return time.Duration(max(left, 0) * float64(time.Second))
}

// rateMeter measures the transfer rate over the last few seconds from (time, bytes) samples in
// a fixed ring, so reporting allocates nothing.
type rateMeter struct {
	at    [16]time.Time
	bytes [16]int64
	n     int // samples held, at most len(at)
	next  int // where the next sample goes
}

// window is how far back the rate looks.
const window = 5 * time.Second

func (m *rateMeter) reset(now time.Time, received int64) {
	*m = rateMeter{}
	m.add(now, received)
}

// add records that received bytes were in at now. Samples closer than window/16 to the last
// one replace it, so the ring spans the whole window.
func (m *rateMeter) add(now time.Time, received int64) {
	if m.n > 0 {
		last := (m.next + len(m.at) - 1) % len(m.at)
		if m.n > 1 && now.Sub(m.at[(last+len(m.at)-1)%len(m.at)]) < window/time.Duration(len(m.at)) {
			m.at[last], m.bytes[last] = now, received
			return
		}
	}
	m.at[m.next], m.bytes[m.next] = now, received
	m.next = (m.next + 1) % len(m.at)
	m.n = min(m.n+1, len(m.at))
}

// perSecond returns the bytes per second between the oldest sample inside the window and the
// newest, or 0 with too little to go on.
func (m *rateMeter) perSecond() float64 {
	if m.n < 2 {
		return 0
	}
	newest := (m.next + len(m.at) - 1) % len(m.at)
	oldest := (m.next + len(m.at) - m.n) % len(m.at)
	for oldest != newest && m.at[newest].Sub(m.at[oldest]) > window {
		oldest = (oldest + 1) % len(m.at)
	}
	dt := m.at[newest].Sub(m.at[oldest]).Seconds()
	if dt <= 0 {
		return 0
	}
	return float64(m.bytes[newest]-m.bytes[oldest]) / dt
}
