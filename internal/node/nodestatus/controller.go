package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/backoff"
	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/kubeclient"
)

const (
	// DefaultUpdateFrequency is nodeStatusUpdateFrequency's default.
	DefaultUpdateFrequency = 10 * time.Second
	// DefaultReportFrequency is nodeStatusReportFrequency's default.
	DefaultReportFrequency = 5 * time.Minute

	// updateRetries is how many times one update is tried before waiting
	// for the next tick.
	updateRetries = 5
	// registerInitialDelay and registerMaxDelay bound the registration
	// back-off.
	registerInitialDelay = 100 * time.Millisecond
	registerMaxDelay     = 7 * time.Second
	// readyPollInterval is how often, after start-up, the controller checks
	// whether the node has become Ready so it can say so at once.
	readyPollInterval = 100 * time.Millisecond
	// readyGracePeriod ends that fast path when the node does not become
	// Ready in time.
	readyGracePeriod = 120 * time.Second
)

// errNodeGone says the Node object was deleted and must be registered again.
var errNodeGone = errors.New("node object not found")

// Config configures a Controller.
type Config struct {
	// Client talks to the API server (required).
	Client kubeclient.Interface
	// NodeName is the Node's name (required).
	NodeName string
	// Clock defaults to the real clock.
	Clock clock.Clock
	// Inputs returns what the status is computed from; called for every
	// registration and update (required). Return an error only when
	// nothing can be reported; health problems belong in the Inputs' error
	// fields.
	Inputs func(ctx context.Context) (Inputs, error)
	// UpdateFrequency is how often the status is computed
	// (nodeStatusUpdateFrequency, default 10s).
	UpdateFrequency time.Duration
	// ReportFrequency is how long an unchanged status waits before it is
	// sent anyway (nodeStatusReportFrequency, default 5m).
	ReportFrequency time.Duration
	// RegisterNode creates the Node (registerNode); when false the Node
	// must be created by someone else and only its status is updated.
	RegisterNode bool
	// OnRegistered, optional, is called with the Node after each
	// successful registration (at start and after the Node was re-created).
	OnRegistered func(*v1.Node)
	// OnRepeatedFailure, optional, is called when an update fails more
	// than once in a row (upstream closes the client's connections).
	OnRepeatedFailure func()
	// Recorder, optional, records the node's events (NodeReady, ...).
	Recorder events.Recorder
	// Latest, optional, is given every Node the controller registers,
	// reads or sends, for the kubelet's other readers.
	Latest *Latest
	// Wake, optional: each receive asks for an update at once (the
	// eviction manager's ConditionsChanged, a new client certificate),
	// or ends a registration back-off early.
	Wake <-chan struct{}
}

// Controller registers the Node and keeps its status up to date.
type Controller struct {
	cfg   Config
	clock clock.Clock

	mu   sync.RWMutex
	node *v1.Node // last Node seen on or sent to the API server

	// Owned by the Run goroutine.
	registered        bool
	lastReport        time.Time
	fastDone          bool
	lastUnschedulable *bool
}

// New returns a controller; it panics when a required field is missing.
func New(cfg Config) *Controller {
	if cfg.Client == nil || cfg.NodeName == "" || cfg.Inputs == nil {
		panic("nodestatus.New: Client, NodeName and Inputs are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.UpdateFrequency <= 0 {
		cfg.UpdateFrequency = DefaultUpdateFrequency
	}
	if cfg.ReportFrequency <= 0 {
		cfg.ReportFrequency = DefaultReportFrequency
	}
	return &Controller{cfg: cfg, clock: cfg.Clock}
}

// Node returns a copy of the last Node seen on or sent to the API server,
// and false before there is one.
func (c *Controller) Node() (*v1.Node, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.node == nil {
		return nil, false
	}
	return c.node.DeepCopy(), true
}

// NodeUID is the UID of the last known Node, "" before there is one.
func (c *Controller) NodeUID() types.UID {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.node == nil {
		return ""
	}
	return c.node.UID
}

func (c *Controller) setNode(n *v1.Node) {
	c.mu.Lock()
	c.node = n.DeepCopy()
	c.mu.Unlock()
	if c.cfg.Latest != nil {
		c.cfg.Latest.set(n)
	}
}

// Run registers the Node (when configured to) and updates its status until
// ctx ends.
func (c *Controller) Run(ctx context.Context) {
	start := c.clock.Now()
	delays := backoff.Doubling(registerInitialDelay, registerMaxDelay)
	for ctx.Err() == nil {
		if c.cfg.RegisterNode && !c.registered {
			if err := c.register(ctx); err != nil {
				delay := delays.Step()
				klog.ErrorS(err, "Unable to register node with API server, will retry", "node", klog.KRef("", c.cfg.NodeName), "after", delay)
				if !c.sleep(ctx, delay) {
					return
				}
				continue
			}
			delays = backoff.Doubling(registerInitialDelay, registerMaxDelay)
		}
		err := c.updateStatus(ctx)
		if errors.Is(err, errNodeGone) && c.cfg.RegisterNode {
			klog.InfoS("Node object is gone; registering it again", "node", klog.KRef("", c.cfg.NodeName))
			continue
		}
		if err != nil {
			klog.ErrorS(err, "Unable to update node status", "node", klog.KRef("", c.cfg.NodeName))
		}
		if !c.waitNext(ctx, start) {
			return
		}
	}
}

// sleep waits d between registration attempts; a Wake ends it early (new
// credentials after TLS bootstrap, for example, so that the Node is
// registered at once instead of after up to registerMaxDelay).
func (c *Controller) sleep(ctx context.Context, d time.Duration) bool {
	t := c.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	case <-c.cfg.Wake:
		return true
	}
}

// waitNext waits for the next tick or a Wake; until the node is first
// seen Ready (or the grace period ends) it also polls so that becoming
// Ready is reported at once. It returns false when ctx ends.
func (c *Controller) waitNext(ctx context.Context, start time.Time) bool {
	tick := c.clock.NewTimer(c.cfg.UpdateFrequency)
	defer tick.Stop()
	for {
		var poll clock.Timer
		var pollC <-chan time.Time
		if !c.fastDone {
			poll = c.clock.NewTimer(readyPollInterval)
			pollC = poll.C()
		}
		select {
		case <-ctx.Done():
			stopTimer(poll)
			return false
		case <-tick.C():
			stopTimer(poll)
			return true
		case <-c.cfg.Wake:
			stopTimer(poll)
			return true
		case <-pollC:
			c.fastUpdate(ctx, start)
		}
	}
}

func stopTimer(t clock.Timer) {
	if t != nil {
		t.Stop()
	}
}

// register creates the Node, or reconciles the one already there.
func (c *Controller) register(ctx context.Context) error {
	in, err := c.cfg.Inputs(ctx)
	if err != nil {
		return fmt.Errorf("collecting node status inputs: %w", err)
	}
	now := c.clock.Now()
	node := NewNode(in)
	SetStatus(node, in, now)
	nodes := c.cfg.Client.CoreV1().Nodes()
	klog.InfoS("Attempting to register node", "node", klog.KObj(node))
	created, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	if err == nil {
		klog.InfoS("Successfully registered node", "node", klog.KObj(created))
		c.lastReport = now
		c.recordEvents(StatusEvents(c.cfg.NodeName, v1.NodeStatus{}, created.Status))
		c.registeredAs(created)
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating node %q: %w", c.cfg.NodeName, err)
	}
	existing, err := nodes.Get(ctx, c.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("getting the existing node %q: %w", c.cfg.NodeName, err)
	}
	klog.InfoS("Node was previously registered", "node", klog.KObj(existing))
	original := existing.DeepCopy()
	if Reconcile(existing, in) {
		updated, err := c.patch(ctx, original, existing)
		if err != nil {
			return fmt.Errorf("reconciling the existing node %q: %w", c.cfg.NodeName, err)
		}
		existing = updated
	}
	c.registeredAs(existing)
	return nil
}

func (c *Controller) registeredAs(node *v1.Node) {
	c.registered = true
	c.setNode(node)
	if c.cfg.OnRegistered != nil {
		c.cfg.OnRegistered(node.DeepCopy())
	}
}

// updateStatus computes the status and sends it when ShouldReport says so,
// trying up to updateRetries times.
func (c *Controller) updateStatus(ctx context.Context) error {
	in, err := c.cfg.Inputs(ctx)
	if err != nil {
		return fmt.Errorf("collecting node status inputs: %w", err)
	}
	var last error
	for i := 0; i < updateRetries; i++ {
		last = c.tryUpdateStatus(ctx, i, in)
		if last == nil || errors.Is(last, errNodeGone) || ctx.Err() != nil {
			return last
		}
		if i > 0 && c.cfg.OnRepeatedFailure != nil {
			c.cfg.OnRepeatedFailure()
		}
		klog.ErrorS(last, "Error updating node status, will retry", "node", klog.KRef("", c.cfg.NodeName), "attempt", i+1)
	}
	return fmt.Errorf("updating node status failed %d times: %w", updateRetries, last)
}

func (c *Controller) tryUpdateStatus(ctx context.Context, try int, in Inputs) error {
	opts := metav1.GetOptions{}
	if try == 0 {
		// The first attempt may be served from the API server's cache;
		// retries (after a conflict, say) read from etcd.
		opts.ResourceVersion = "0"
	}
	old, err := c.cfg.Client.CoreV1().Nodes().Get(ctx, c.cfg.NodeName, opts)
	if apierrors.IsNotFound(err) {
		c.registered = false
		return fmt.Errorf("getting node %q: %w (%w)", c.cfg.NodeName, errNodeGone, err)
	}
	if err != nil {
		return fmt.Errorf("getting node %q: %w", c.cfg.NodeName, err)
	}
	c.noteSchedulable(old, in)

	node := old.DeepCopy()
	labelsChanged := ensureOSArchLabels(node, in)
	now := c.clock.Now()
	SetStatus(node, in, now)
	if !labelsChanged && !ShouldReport(old.Status, node.Status, c.lastReport, now, c.cfg.ReportFrequency) {
		c.setNode(old)
		return nil
	}
	if _, err := c.patch(ctx, old, node); err != nil {
		return err
	}
	c.lastReport = now
	return nil
}

// fastUpdate sends the status at once when the node has just become Ready.
func (c *Controller) fastUpdate(ctx context.Context, start time.Time) {
	if c.clock.Since(start) >= readyGracePeriod {
		klog.ErrorS(nil, "Node did not become ready in time after start-up", "node", klog.KRef("", c.cfg.NodeName))
		c.fastDone = true
		return
	}
	base, ok := c.Node()
	if !ok {
		return
	}
	if IsReady(base.Status) {
		c.fastDone = true
		return
	}
	in, err := c.cfg.Inputs(ctx)
	if err != nil {
		return
	}
	node := base.DeepCopy()
	ensureOSArchLabels(node, in)
	now := c.clock.Now()
	SetStatus(node, in, now)
	if !IsReady(node.Status) {
		return
	}
	c.fastDone = true
	klog.InfoS("Fast updating node status as it just became ready", "node", klog.KRef("", c.cfg.NodeName))
	if _, err := c.patch(ctx, base, node); err != nil {
		// base may be stale; the regular path reads the Node afresh.
		klog.ErrorS(err, "Error updating node status, will retry with a full update", "node", klog.KRef("", c.cfg.NodeName))
		if err := c.updateStatus(ctx); err != nil {
			klog.ErrorS(err, "Unable to update node status", "node", klog.KRef("", c.cfg.NodeName))
		}
		return
	}
	c.lastReport = now
}

// patch sends the difference from old to cur and remembers the result.
func (c *Controller) patch(ctx context.Context, old, cur *v1.Node) (*v1.Node, error) {
	data, err := StatusPatch(old, cur)
	if err != nil {
		return nil, err
	}
	updated, err := c.cfg.Client.CoreV1().Nodes().Patch(ctx, c.cfg.NodeName, types.StrategicMergePatchType, data, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		c.registered = false
		return nil, fmt.Errorf("patching the status of node %q: %w (%w)", c.cfg.NodeName, errNodeGone, err)
	}
	if err != nil {
		return nil, fmt.Errorf("patching the status of node %q: %w", c.cfg.NodeName, err)
	}
	c.recordEvents(StatusEvents(c.cfg.NodeName, old.Status, updated.Status))
	c.setNode(updated)
	return updated, nil
}

// noteSchedulable records NodeSchedulable / NodeNotSchedulable when
// spec.unschedulable changes (someone cordoned or uncordoned the node).
func (c *Controller) noteSchedulable(node *v1.Node, in Inputs) {
	if c.lastUnschedulable == nil {
		c.lastUnschedulable = &in.Unschedulable
	}
	if *c.lastUnschedulable == node.Spec.Unschedulable {
		return
	}
	unschedulable := node.Spec.Unschedulable
	c.lastUnschedulable = &unschedulable
	c.recordEvents([]Event{SchedulableEvent(c.cfg.NodeName, unschedulable)})
}

func (c *Controller) recordEvents(evs []Event) {
	if c.cfg.Recorder == nil {
		return
	}
	ref := NodeRef(c.cfg.NodeName)
	for _, e := range evs {
		c.cfg.Recorder.Eventf(ref, e.Type, e.Reason, "%s", e.Message)
	}
}
