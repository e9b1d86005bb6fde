package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync/atomic"

	"github.com/trochilus-llm/trochilus/engine/machine"
	"github.com/trochilus-llm/trochilus/experts"
	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/units"
	"github.com/trochilus-llm/trochilus/kernels"
)

// Options configure Load.
type Options struct {
	// Threads is the number of worker threads (the caller's included); 0 means
	// kernels.DefaultThreads(), of which decode and verify passes run on as many as they
	// were timed fastest on (threads.go). The logits do not depend on it.
	Threads int

	// Tier is the kernel implementation; nil means kernels.Best(): the fastest this CPU runs,
	// capped by $TROCHILUS_CPU_MAX. Every tier gives the same bits.
	Tier *kernels.Tier

	// KeepF32Routers keeps router matrices stored as F32 even when every value is a bfloat16
	// (the default narrows them to BF16 at load: half the bytes, the same bits).
	KeepF32Routers bool

	// Weights says where the weights live; the zero value, WeightsAuto, lets the loader choose.
	// It changes speed and memory use, never a result.
	Weights Weights

	// ExpertBudget streams the experts from disk through a store of at most this many bytes
	// (ExpertBudgetMin: the fewest slots a pass can run with), for measurements and tests.
	// Zero lets the loader decide (PlanMemory): the experts stream when the file and the
	// planned session do not fit in RAM with the system's reserve left free, under the budget
	// the machine's memory allows. It changes speed and memory use, never a result.
	ExpertBudget int64

	// Context and PassSize describe the session the load plans room for (see PlanRequest):
	// the positions it holds (0: the default, DefaultContext or the model's context when
	// shorter, less when that does not fit) and the most tokens a pass evaluates (0:
	// DefaultPassSize). Open the session with Plan().Context and the same pass size: a longer
	// session, or a second one, takes memory the plan did not count.
	Context, PassSize int
	// Sessions is how many such sessions the plan holds room for (0: one): open no more.
	Sessions int

	// mutant, set only by this package's mutation tests, plants a deliberate bug (see
	// mutant.go); without the trochilus_mutants build tag it is an empty struct.
	mutant mutant
}

// ExpertBudgetMin, as Options.ExpertBudget, streams the experts through the fewest slots a
// pass can run with: one layer's experts and one token's.
const ExpertBudgetMin = -1

// Weights is where a model's weights live while it runs.
type Weights int

const (
	// WeightsAuto reads the weights into resident memory when the platform has it and the
	// file fits in the RAM available now with the reserve (machine.Memory.Reserve) left free,
	// and maps the file otherwise.
	WeightsAuto Weights = iota
	// WeightsResident reads the whole file into memory the engine owns (Linux: anonymous
	// memory asking for 2 MiB pages). Loading takes longer than mapping (the bytes are
	// copied), and the memory stays the engine's until Close; tokens then read faster.
	WeightsResident
	// WeightsMapped maps the file read-only: loading is immediate, the page cache holds the
	// weights and the kernel may drop and re-read them under memory pressure.
	WeightsMapped
)

func (w Weights) String() string {
	switch w {
	case WeightsAuto:
		return "auto"
	case WeightsResident:
		return "resident"
	case WeightsMapped:
		return "mapped"
	}
	return fmt.Sprintf("Weights(%d)", int(w))
}

// Model is a loaded model: its configuration, its weights (resident or mapped, see Weights) and
// the worker pool that runs its sessions. Sessions of one Model may evaluate on different
// goroutines at once, with the experts in memory or streamed, each getting bit for bit the
// logits it gets alone: their matrix products take turns on the pool, and with streamed experts
// the store keeps each session's units of a layer pinned until its expert products are done, its
// calls taking turns (see experts.Store); one Session is used by one goroutine at a time, Close
// included.
type Model struct {
	path string
	cfg  Config
	file *gguf.File
	data *mapping
	pool *kernels.Pool
	tier *kernels.Tier
	net  network

	// store, when the experts stream from disk, holds those in RAM; nil when every expert
	// is in the model's memory.
	store *experts.Store

	plan Plan // the memory plan the load followed

	// tuner chooses the threads of decode and verify passes (threads.go); nil when the
	// caller named a thread count, which every pass then runs on.
	tuner *threadTuner
	// generating counts the generations running on the model now: the pool is shared, so
	// passes are tuned only while one runs alone.
	generating atomic.Int32

	closed atomic.Bool
}

// A network is one architecture's weights, ready to run.
type network interface {
	// newRunner makes the per-session state (KV cache and pass buffers) for a session of ctx
	// positions evaluating at most pass tokens at a time.
	newRunner(m *Model, ctx, pass int) (runner, error)
}

// A runner evaluates tokens for one session.
type runner interface {
	// forward runs tokens (at most the pass size) at positions pos, pos+1, ... and writes the
	// logits of the last token into logits (vocab floats) or, when all is set, of every token
	// (len(tokens)·vocab floats). The KV cache of earlier positions must be in place.
	forward(ctx context.Context, tokens []int32, pos int, logits []float32, all bool) error
	// stepRows runs one pass whose row t is tokens[t] at position pos[t] of the session of
	// rows[t] (this runner's own among them, or not), with this runner's buffers, and writes
	// every row's logits (len(tokens)·vocab floats): Model.Step.
	stepRows(ctx context.Context, tokens []int32, rows []runner, pos []int, logits []float32) error
}

// An architecture reads its configuration from a file's metadata and builds its network from
// the mapped tensors.
type architecture struct {
	config func(f *gguf.File) (Config, error)
	build  func(cfg *Config, ts *tensorSet, opts *Options) (network, error)
	// experts names each layer's stacked expert tensors (blk.N.NAME.weight), in the order
	// the runner takes them from the store.
	experts []string
}

// architectures lists the architectures Load knows, by general.architecture.
func architectures() map[string]architecture {
	return map[string]architecture{
		"olmoe":    {config: olmoeConfig, build: buildMoE, experts: []string{"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"}},
		"qwen3moe": {config: qwen3moeConfig, build: buildMoE, experts: []string{"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"}},
	}
}

// Architectures returns the names of the architectures Load accepts, sorted.
func Architectures() []string {
	var names []string
	for n := range architectures() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Load opens the GGUF model at path, checks its configuration and every tensor it needs
// (presence, type, shape), and maps it for running. A file that is corrupt, of an unknown
// architecture or not the shape its metadata says is an error naming what is wrong.
func Load(ctx context.Context, path string, opts Options) (*Model, error) {
	if opts.Threads < 0 {
		return nil, fmt.Errorf("engine: %d threads", opts.Threads)
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	m, err := load(ctx, path, f, opts)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("engine: %s: %w", path, err)
	}
	return m, nil
}

func load(ctx context.Context, path string, f *gguf.File, opts Options) (*Model, error) {
	cfg, layout, plan, err := planFile(ctx, f, &opts, machine.ReadMemory)
	if err != nil {
		return nil, err
	}
	arch := architectures()[cfg.Arch]
	if plan.Placement == ExpertsStreamed {
		// The dense weights go through the page cache, the experts through the store.
		opts.Weights = WeightsMapped
	}
	fd, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	data, err := placeWeights(ctx, fd, f.Size(), opts, machine.ReadMemory)
	fd.Close()
	if err != nil {
		return nil, err
	}
	var store *experts.Store
	if plan.Placement == ExpertsStreamed {
		if store, err = experts.NewStore(path, layout, plan.UnitsInRAM); err != nil {
			data.close()
			return nil, err
		}
	}
	closeAll := func() {
		data.close()
		if store != nil {
			store.Close()
		}
	}
	ts := &tensorSet{f: f, data: data.data}
	net, err := arch.build(&cfg, ts, &opts)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		closeAll()
		return nil, err
	}
	tier := opts.Tier
	if tier == nil {
		if tier, err = kernels.Best(); err != nil {
			closeAll()
			return nil, err
		}
	}
	m := &Model{path: path, cfg: cfg, file: f, data: data, pool: kernels.NewPool(opts.Threads),
		tier: tier, net: net, store: store, plan: plan}
	if opts.Threads == 0 && m.pool.Threads() > 1 {
		m.tuner = newThreadTuner(m.pool.Threads())
	}
	return m, nil
}

// PlanLoad returns the plan Load would follow for the model whose header f is (gguf.Open, or
// gguf.Read of the header alone) on a machine with total and avail bytes of memory
// (machine.RAM; not a memory cgroup's), without reading a weight: the same steps and the same
// planner as Load.
func PlanLoad(f *gguf.File, opts Options, total, avail uint64) (Plan, error) {
	ram := func(context.Context) (machine.Memory, error) {
		return machine.Memory{Total: total, Available: avail}, nil
	}
	_, _, plan, err := planFile(context.Background(), f, &opts, ram)
	if err != nil {
		return plan, fmt.Errorf("engine: %w", err)
	}
	return plan, nil
}

// planFile reads f's configuration and expert layout and plans the load (PlanMemory through
// planLoad, with the machine's memory from ram): the steps of load before any weight is
// touched, which a test runs on a header alone.
func planFile(ctx context.Context, f *gguf.File, opts *Options, ram func(context.Context) (machine.Memory, error)) (Config, experts.Layout, Plan, error) {
	cfg, err := ReadConfig(f)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return cfg, experts.Layout{}, Plan{}, err
	}
	layout, err := expertLayout(f, &cfg, architectures()[cfg.Arch].experts)
	if err != nil {
		return cfg, layout, Plan{}, err
	}
	plan, err := planLoad(ctx, PlanRequest{Config: cfg, Footprint: footprint(f.Size(), &layout, &cfg),
		Context: opts.Context, PassSize: opts.PassSize, Threads: opts.Threads,
		ExpertBudget: opts.ExpertBudget, Weights: opts.Weights, Sessions: opts.Sessions}, ram)
	return cfg, layout, plan, err
}

// placeWeights brings the file's bytes into memory as opts.Weights asks (see Weights); ram
// reports the machine's memory (machine.ReadMemory; tests pass their own).
func placeWeights(ctx context.Context, fd *os.File, size int64, opts Options, ram func(context.Context) (machine.Memory, error)) (*mapping, error) {
	threads := opts.Threads
	if threads == 0 {
		threads = kernels.DefaultThreads()
	}
	fits := func() error {
		mem, err := ram(ctx)
		if err != nil {
			return err
		}
		if reserve := mem.Reserve(); uint64(size) > mem.Available || mem.Available-uint64(size) < reserve {
			return fmt.Errorf("%s of weights do not fit in RAM: %s available, %s %s",
				units.Bytes(uint64(size)), units.Bytes(mem.Available), units.Bytes(reserve), machine.ReserveRule(mem.Cgroup))
		}
		return nil
	}
	switch opts.Weights {
	case WeightsMapped:
		return mapFile(fd, size)
	case WeightsResident:
		// The RAM guard: owned memory cannot be given back under pressure, so a load that
		// would leave less than the reserve is refused.
		if err := fits(); err != nil {
			return nil, err
		}
		return readResident(ctx, fd, size, threads)
	case WeightsAuto:
	default:
		return nil, fmt.Errorf("weights placement %v is not one of auto, resident, mapped", opts.Weights)
	}
	if fits() != nil {
		// Too big to own (or the memory is unknown): the page cache can give pages back.
		return mapFile(fd, size)
	}
	m, err := readResident(ctx, fd, size, threads)
	if errors.Is(err, errNotResident) {
		return mapFile(fd, size)
	}
	return m, err
}

// Close stops the model's workers and unmaps its file. Its sessions' evaluations fail
// afterwards; Close must not run while one is in progress. Its sessions may be closed before
// or after it.
func (m *Model) Close() error {
	if m.closed.Swap(true) {
		return nil
	}
	m.pool.Close()
	err := m.data.close()
	if m.store != nil {
		err = errors.Join(err, m.store.Close())
	}
	if cerr := m.file.Close(); err == nil {
		err = cerr
	}
	return err
}

// Plan returns the memory plan the load followed: where the weights are, and the session it
// holds room for (open it with Plan().Context positions).
func (m *Model) Plan() Plan { return m.plan }

// Config returns the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// Path returns the file the model was loaded from.
func (m *Model) Path() string { return m.path }

// File returns the model's parsed GGUF header (for its tokenizer metadata, say).
func (m *Model) File() *gguf.File { return m.file }

// Weights returns where the model's weights live: WeightsResident or WeightsMapped.
func (m *Model) Weights() Weights {
	if m.data.resident {
		return WeightsResident
	}
	return WeightsMapped
}

// Experts describes where the experts live: "in memory", or the store's slots and reads.
func (m *Model) Experts() string {
	if m.store == nil {
		return "in memory"
	}
	how := "buffered reads"
	if m.store.Direct() {
		how = "unbuffered reads"
	}
	return fmt.Sprintf("streamed from disk: %d slots of %s, %s", m.store.Slots(), units.Bytes(m.store.SlotBytes()), how)
}

// ExpertStats returns the expert store's counts (zero when every expert is in memory).
func (m *Model) ExpertStats() experts.Stats {
	if m.store == nil {
		return experts.Stats{}
	}
	return m.store.Stats()
}

// Kernels returns the name of the kernel tier the model runs ("scalar", "avx2", "avx512",
// "avx512vnni"): a speed choice only, every tier gives the same bits.
func (m *Model) Kernels() string { return m.tier.Name }

// Threads returns the number of threads the model's pool runs.
func (m *Model) Threads() int { return m.pool.Threads() }

// EOS returns the end-of-sequence token id from the file's tokenizer metadata, or false when
// the file names none inside the vocabulary.
func (m *Model) EOS() (int32, bool) {
	v, err := m.file.Uint32("tokenizer.ggml.eos_token_id")
	if err != nil || int64(v) >= int64(m.cfg.Vocab) {
		return 0, false
	}
	return int32(v), true
}

// ErrContextFull is returned when a session has no room for the tokens it is given.
var ErrContextFull = errors.New("context full")
