package kuberuntime

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// pullWant is what one EnsureImage call must do.
type pullWant struct {
	calls  []string // image service calls, in order
	err    error    // nil, or the Err* the error wraps
	events []string // event reasons, in order
}

// TestImagePuller follows upstream's pullerTestCases
// (pkg/kubelet/images/image_manager_test.go) with the kubelet's real
// back-off (10s doubling to 5m where upstream's test uses 1s): the clock
// steps 10s before each call. Upstream's GetImageRef and GetImageSize are
// both ImageStatus here.
func TestImagePuller(t *testing.T) {
	pulled := pullWant{calls: []string{"ImageStatus", "PullImage", "ImageStatus"}, events: []string{"Pulling", "Pulled"}}
	present := pullWant{calls: []string{"ImageStatus"}, events: []string{"Pulled"}}
	pullFailed := pullWant{calls: []string{"ImageStatus", "PullImage"}, err: ErrImagePull, events: []string{"Pulling", "Failed"}}
	backOff := pullWant{calls: []string{"ImageStatus"}, err: ErrImagePullBack, events: []string{"BackOff"}}
	cases := []struct {
		name    string
		image   string
		policy  v1.PullPolicy
		present []string
		// inspectErrs and pullErrs fail that many ImageStatus / PullImage calls.
		inspectErrs, pullErrs int
		qps                   float32
		burst                 int
		want                  []pullWant
	}{
		{name: "image missing, pull", image: "missing_image", policy: v1.PullIfNotPresent,
			want: []pullWant{pulled}},
		{name: "image present, don't pull", image: "present_image", policy: v1.PullIfNotPresent, present: []string{"present_image"},
			want: []pullWant{present, present, present}},
		{name: "image present, pull always", image: "present_image", policy: v1.PullAlways, present: []string{"present_image"},
			want: []pullWant{pulled, pulled, pulled}},
		{name: "image missing, never pull", image: "missing_image", policy: v1.PullNever,
			want: []pullWant{
				{calls: []string{"ImageStatus"}, err: ErrImageNeverPull, events: []string{"ErrImageNeverPull"}},
				{calls: []string{"ImageStatus"}, err: ErrImageNeverPull, events: []string{"ErrImageNeverPull"}},
			}},
		{name: "image present, never pull", image: "present_image", policy: v1.PullNever, present: []string{"present_image"},
			want: []pullWant{present}},
		{name: "image missing, unable to inspect", image: "missing_image", policy: v1.PullIfNotPresent, inspectErrs: 3,
			want: []pullWant{
				{calls: []string{"ImageStatus"}, err: ErrImageInspect, events: []string{"InspectFailed"}},
				{calls: []string{"ImageStatus"}, err: ErrImageInspect, events: []string{"InspectFailed"}},
				{calls: []string{"ImageStatus"}, err: ErrImageInspect, events: []string{"InspectFailed"}},
			}},
		{name: "image missing, unable to fetch: back-off between pulls", image: "typo_image", policy: v1.PullIfNotPresent, pullErrs: 10,
			want: []pullWant{pullFailed, pullFailed, backOff, pullFailed, backOff, backOff}},
		{name: "image present and qps>0, pull", image: "present_image", policy: v1.PullAlways, present: []string{"present_image"},
			qps: 400, burst: 600, want: []pullWant{pulled, pulled, pulled}},
		{name: "pull QPS exceeded: ErrImagePull without a pull, then back-off", image: "present_image", policy: v1.PullAlways,
			qps: 0.01, burst: 1,
			want: []pullWant{
				pulled,
				{calls: []string{"ImageStatus"}, err: ErrImagePull, events: []string{"Pulling", "Failed"}},
				{calls: []string{"ImageStatus"}, err: ErrImagePull, events: []string{"Pulling", "Failed"}},
				{calls: []string{"ImageStatus"}, err: ErrImagePullBack, events: []string{"BackOff"}},
			}},
		{name: "invalid image name, no pull", image: " busybox", policy: v1.PullAlways,
			want: []pullWant{{err: ErrInvalidImage, events: []string{"InspectFailed"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(_ *Config, ic *ImageConfig) { ic.QPS, ic.Burst = tc.qps, tc.burst })
			e.cri.Images.SetFakeImages(tc.present)
			for i := 0; i < tc.inspectErrs; i++ {
				e.cri.Images.InjectError("ImageStatus", errors.New("unknown inspectError"))
			}
			for i := 0; i < tc.pullErrs; i++ {
				e.cri.Images.InjectError("PullImage", errors.New("404"))
			}
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "test_pod", Namespace: "test-ns", UID: "bar"}}
			c := &v1.Container{Name: "container_name", Image: tc.image, ImagePullPolicy: tc.policy}
			for i, want := range tc.want {
				e.clk.Step(10 * time.Second)
				e.reset()
				_, err := e.m.puller.EnsureImage(e.ctx, pod, c, nil, nil)
				if got := e.cri.ImageCalls(); !reflect.DeepEqual(got, want.calls) {
					t.Errorf("call %d: image calls %v, want %v", i+1, got, want.calls)
				}
				if (want.err == nil) != (err == nil) || (want.err != nil && !errors.Is(err, want.err)) {
					t.Errorf("call %d: error %v, want %v", i+1, err, want.err)
				}
				var reasons []string
				for _, ev := range e.events() {
					reasons = append(reasons, strings.Fields(ev)[1])
				}
				if !reflect.DeepEqual(reasons, want.events) {
					t.Errorf("call %d: events %v, want %v", i+1, reasons, want.events)
				}
			}
		})
	}
}

// A pull that fails reports ErrImagePull and asks to be synced again in a
// second, so the pod shows ImagePullBackOff soon; during the back-off the
// sync reports ImagePullBackOff with the last pull error and asks to be
// woken when the back-off ends; then the pull is tried again.
func TestSyncPodImagePullBackOff(t *testing.T) {
	e := newEnv(t, nil)
	pod := newPod("foo1")
	e.cri.Images.InjectError("PullImage", errors.New("not found"))
	e.cri.Images.InjectError("PullImage", errors.New("not found"))
	pullErr := `failed to pull and unpack image "busybox": rpc error: code = Unknown desc = not found`

	res := e.sync(pod, nil)
	checkSync(t, e, pod, res, syncWant{calls: []string{"RunPodSandbox", "PodSandboxStatus"},
		failures: map[string]string{"foo1": "ErrImagePull"}, err: pullErr, changed: true, requeue: time.Second})
	if got := res.Failures["foo1"].Message; got != pullErr {
		t.Errorf("message %q, want %q", got, pullErr)
	}

	e.clk.Step(time.Second)
	res = e.sync(pod, nil)
	checkSync(t, e, pod, res, syncWant{failures: map[string]string{"foo1": "ImagePullBackOff"},
		events: []string{`Normal BackOff Back-off pulling image "busybox"`},
		err:    "ImagePullBackOff", changed: true, requeue: 9 * time.Second})
	if want := `Back-off pulling image "busybox": ErrImagePull: ` + pullErr; res.Failures["foo1"].Message != want {
		t.Errorf("message %q, want %q", res.Failures["foo1"].Message, want)
	}

	e.clk.Step(9 * time.Second)
	res = e.sync(pod, nil)
	checkSync(t, e, pod, res, syncWant{failures: map[string]string{"foo1": "ErrImagePull"}, err: pullErr,
		changed: true, requeue: time.Second})

	e.clk.Step(20 * time.Second)
	res = e.sync(pod, nil)
	checkSync(t, e, pod, res, syncWant{calls: []string{"CreateContainer", "StartContainer"}, started: []string{"foo1"},
		running: []string{"foo1/0/0"}, changed: true})
}

// Credentials are tried in turn until one pulls the image.
func TestImagePullCredentials(t *testing.T) {
	auths := []*runtimeapi.AuthConfig{{Username: "a", Password: "1"}, {Username: "b", Password: "2"}}
	var asked []string
	e := newEnv(t, func(c *Config, _ *ImageConfig) {
		c.Credentials = func(_ context.Context, pod *v1.Pod, image string) ([]*runtimeapi.AuthConfig, error) {
			asked = append(asked, pod.Name+" "+image)
			return auths, nil
		}
	})
	e.cri.Images.InjectError("PullImage", errors.New("401 unauthorized"))
	pod := newPod("foo1")
	pod.Spec.Containers[0].Image = "registry.example/app:1"
	res := e.sync(pod, nil)
	checkSync(t, e, pod, res, syncWant{calls: []string{"RunPodSandbox", "PodSandboxStatus", "CreateContainer", "StartContainer"},
		started: []string{"foo1"}, running: []string{"foo1/0/0"}, changed: true})
	if want := []string{"foo registry.example/app:1"}; !reflect.DeepEqual(asked, want) {
		t.Errorf("credentials asked for %v, want %v", asked, want)
	}
	var users []string
	for _, p := range e.cri.Pulls() {
		users = append(users, p.GetAuth().GetUsername())
		if p.GetSandboxConfig().GetMetadata().GetUid() != string(pod.UID) {
			t.Errorf("pull without the pod's sandbox config: %v", p.GetSandboxConfig())
		}
	}
	if want := []string{"a", "b"}; !reflect.DeepEqual(users, want) {
		t.Errorf("pulled as %v, want %v", users, want)
	}
}

// Credentials are only looked up for a pull (a credential provider plugin
// is not run for an image already present), and a failed source is named
// in the pull's error.
func TestImagePullCredentialsLazyAndFailedSource(t *testing.T) {
	asked := 0
	e := newEnv(t, func(c *Config, _ *ImageConfig) {
		c.Credentials = func(context.Context, *v1.Pod, string) ([]*runtimeapi.AuthConfig, error) {
			asked++
			return nil, errors.New(`credential provider plugin "ecr": exit status 1`)
		}
	})
	e.cri.Images.SetFakeImages([]string{"busybox"})
	pod := newPod("foo1")
	if _, err := e.m.puller.EnsureImage(e.ctx, pod, &pod.Spec.Containers[0], nil, e.m.cfg.Credentials); err != nil || asked != 0 {
		t.Fatalf("present image: err %v, credentials asked %d times; want none", err, asked)
	}
	e.cri.Images.InjectError("PullImage", errors.New("401 unauthorized"))
	c := pod.Spec.Containers[0]
	c.Image, c.ImagePullPolicy = "registry.example/app:1", v1.PullAlways
	_, err := e.m.puller.EnsureImage(e.ctx, pod, &c, nil, e.m.cfg.Credentials)
	if asked != 1 || !errors.Is(err, ErrImagePull) || !strings.Contains(err.Error(), `401 unauthorized (credential provider plugin "ecr": exit status 1)`) {
		t.Fatalf("pull: asked %d, err %v; want one lookup and the plugin's failure in the error", asked, err)
	}
}

// A pull waiting for its turn (serializeImagePulls) gives up when the sync
// is cancelled, without pulling.
func TestSerializedPullCancelled(t *testing.T) {
	e := newEnv(t, func(_ *Config, ic *ImageConfig) { ic.SerializePulls = true })
	e.m.puller.slots <- struct{}{} // another pull holds the only slot
	ctx, cancel := context.WithCancel(e.ctx)
	pod := newPod("foo1")
	done := make(chan error)
	go func() {
		_, err := e.m.puller.EnsureImage(ctx, pod, &pod.Spec.Containers[0], nil, nil)
		done <- err
	}()
	if ev := <-e.rec.Events; ev != `Normal Pulling Pulling image "busybox"` {
		t.Fatalf("event %q, want Pulling", ev)
	}
	cancel() // the pull now waits for the slot, or is about to
	if err := <-done; !errors.Is(err, ErrImagePull) || !strings.Contains(err.Error(), context.Canceled.Error()) {
		t.Fatalf("error %v, want ErrImagePull for the cancelled wait", err)
	}
	if pulls := e.cri.Pulls(); len(pulls) != 0 {
		t.Fatalf("pulled %v while another pull held the slot", pulls)
	}
	<-e.m.puller.slots
	e.clk.Step(10 * time.Second) // past the back-off of the cancelled pull
	if _, err := e.m.puller.EnsureImage(e.ctx, pod, &pod.Spec.Containers[0], nil, nil); err != nil {
		t.Fatalf("pull with the slot free: %v", err)
	}
}

// progressLog records what the puller asks of its PullProgress in one
// sequence with the events sent so far.
type progressLog struct {
	log    *[]string
	events func() []string
}

func (p progressLog) note(what string) {
	for _, ev := range p.events() {
		*p.log = append(*p.log, "event "+strings.Fields(ev)[1])
	}
	*p.log = append(*p.log, what)
}

func (p progressLog) Watch(pod *v1.Pod, image, message string) func() {
	p.note("watch " + pod.Name + " " + image + ": " + message)
	return func() { p.note("stop " + image) }
}

// A pull is watched for progress from its start (after the Pulling event)
// until it ends, before Pulled or Failed is recorded; no pull, no watch.
func TestImagePullProgressWatched(t *testing.T) {
	var log []string
	var e *env
	e = newEnv(t, func(_ *Config, ic *ImageConfig) {
		ic.Progress = progressLog{log: &log, events: func() []string { return e.events() }}
	})
	e.cri.Images.SetFakeImages([]string{"present"})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	p := progressLog{log: &log, events: e.events}
	for _, tc := range []struct {
		image string
		err   error
		want  []string
	}{
		{image: "big:1", want: []string{"event Pulling", `watch p big:1: Pulling image "big:1"`, "stop big:1", "event Pulled"}},
		{image: "gone:1", err: errors.New("404"), want: []string{"event Pulling", `watch p gone:1: Pulling image "gone:1"`, "stop gone:1", "event Failed"}},
		{image: "present", want: []string{"event Pulled"}},
	} {
		log = nil
		if tc.err != nil {
			e.cri.Images.InjectError("PullImage", tc.err)
		}
		if _, err := e.m.puller.EnsureImage(e.ctx, pod, &v1.Container{Name: "c", Image: tc.image}, nil, nil); (err != nil) != (tc.err != nil) {
			t.Fatalf("%s: error %v", tc.image, err)
		}
		p.note("end")
		if want := append(tc.want, "end"); !reflect.DeepEqual(log, want) {
			t.Errorf("%s: %q, want %q", tc.image, log, want)
		}
	}
}
