package sources

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/localobjects"
)

// DefaultCheckPeriod is how often sources relist when no period is given
// (upstream's fileCheckFrequency and httpCheckFrequency default).
const DefaultCheckPeriod = 20 * time.Second

// FileSourceConfig configures RunFileSource.
type FileSourceConfig struct {
	// Path is a directory of manifests or a single manifest file. In a
	// directory, every regular file whose name does not start with "." is
	// read, in name order; subdirectories are not entered. Required.
	Path string
	// NodeName is the node the pods are bound to. Required.
	NodeName string
	// Period is the time between full relists. Defaults to DefaultCheckPeriod.
	Period time.Duration
	// Clock drives the relists and stamps config.seen. Defaults to the real clock.
	Clock clock.Clock
	// Out receives a full snapshot of the source's pods after every relist.
	// Required unless ObjectsOnly.
	Out chan<- []*v1.Pod
	// LocalObjects (standalone mode) lets the pods reference the node's
	// local ConfigMaps and Secrets; without it such references make a pod
	// invalid, as upstream.
	LocalObjects bool
	// Objects, when set (standalone mode), receives the valid ConfigMaps
	// and Secrets found at Path after every relist, before the pods leave
	// on Out; when nil such documents make a manifest invalid, as upstream.
	Objects func([]localobjects.Entry)
	// ObjectsOnly reads ConfigMaps and Secrets alone (a local objects
	// directory): pods found there are reported and ignored.
	ObjectsOnly bool
}

func (c FileSourceConfig) validate() error {
	var errs []error
	if c.Path == "" {
		errs = append(errs, errors.New("path is required"))
	}
	if c.NodeName == "" {
		errs = append(errs, errors.New("node name is required"))
	}
	if c.Out == nil && !c.ObjectsOnly {
		errs = append(errs, errors.New("output channel is required"))
	}
	if c.ObjectsOnly && c.Objects == nil {
		errs = append(errs, errors.New("an objects-only source needs Objects"))
	}
	if c.Period < 0 {
		errs = append(errs, fmt.Errorf("period %v is negative", c.Period))
	}
	return errors.Join(errs...)
}

// RunFileSource publishes the static pods found at cfg.Path until ctx ends.
// It pushes a first snapshot at once (empty if the path is missing or holds
// no pods), then relists on every file system change under the path and
// every cfg.Period. A missing path is not fatal: it yields an empty snapshot
// and is looked for again at every relist. A manifest that cannot be read,
// decoded or validated is skipped with one error log; it never affects the
// pods of other manifests.
func RunFileSource(ctx context.Context, cfg FileSourceConfig) {
	if err := cfg.validate(); err != nil {
		klog.ErrorS(err, "Invalid static pod file source configuration; not starting it", "path", cfg.Path)
		return
	}
	if cfg.Period == 0 {
		cfg.Period = DefaultCheckPeriod
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	s := &fileSource{
		path:         filepath.Clean(cfg.Path),
		nodeName:     cfg.NodeName,
		clock:        cfg.Clock,
		out:          cfg.Out,
		localObjects: cfg.LocalObjects,
		objects:      cfg.Objects,
		objectsOnly:  cfg.ObjectsOnly,
		lastGood:     map[string][]*v1.Pod{},
		lastGoodObjs: map[string]map[localobjects.Key]runtime.Object{},
		logged:       map[string]string{},
	}
	klog.InfoS("Starting static pod file source", "path", s.path, "period", cfg.Period)

	var events <-chan fsnotify.Event
	var watchErrs <-chan error
	if w, err := fsnotify.NewWatcher(); err != nil {
		klog.ErrorS(err, "Cannot watch static pod path; relying on periodic relists", "path", s.path, "period", cfg.Period)
	} else {
		s.watcher = w
		defer w.Close()
		events, watchErrs = w.Events, w.Errors
	}

	// The watch and the timer exist before the first snapshot leaves, so
	// nothing that happens after it is missed. The timer is re-armed as soon
	// as it fires, so the relist period counts from the start of a relist.
	s.ensureWatch()
	timer := s.clock.NewTimer(cfg.Period)
	defer timer.Stop()
	if !s.relist(ctx, false) {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
			timer.Reset(cfg.Period)
			if !s.relist(ctx, false) {
				return
			}
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if !s.handleEvent(ev) {
				continue
			}
			s.drainEvents(events)
			if !s.relist(ctx, true) {
				return
			}
		case err, ok := <-watchErrs:
			if !ok {
				watchErrs = nil
				continue
			}
			// An overflowed or failed watch may have lost events.
			klog.ErrorS(err, "Error watching static pod path; relisting", "path", s.path)
			if !s.relist(ctx, false) {
				return
			}
		}
	}
}

// fileSource is the state of one RunFileSource; only its goroutine uses it.
type fileSource struct {
	path     string
	nodeName string
	clock    clock.Clock
	out      chan<- []*v1.Pod
	watcher  *fsnotify.Watcher // nil when watching is unavailable
	watched  string            // the directory being watched, "" if none

	localObjects bool
	objects      func([]localobjects.Entry)
	objectsOnly  bool

	// lastGood holds, per manifest file, the pods of its last successful read.
	lastGood map[string][]*v1.Pod
	// lastGoodObjs holds, per manifest file, the objects last used from it.
	lastGoodObjs map[string]map[localobjects.Key]runtime.Object
	// logged holds, per path, the problem last logged, so a manifest that
	// stays broken is reported once rather than at every relist.
	logged map[string]string
	// missing is whether the path was missing at the last relist.
	missing bool
}

// ensureWatch watches the path if it is a directory, and its parent
// otherwise, so that creating, replacing or removing the path is noticed.
func (s *fileSource) ensureWatch() {
	if s.watcher == nil {
		return
	}
	target := filepath.Dir(s.path)
	if info, err := os.Stat(s.path); err == nil && info.IsDir() {
		target = s.path
	}
	if target == s.watched {
		return
	}
	if s.watched != "" {
		_ = s.watcher.Remove(s.watched) // it may already be gone with its directory
		s.watched = ""
	}
	if err := s.watcher.Add(target); err != nil {
		klog.V(2).InfoS("Cannot watch static pod directory yet; will retry", "dir", target, "err", err)
		return
	}
	klog.V(4).InfoS("Watching static pod directory", "dir", target)
	s.watched = target
}

// handleEvent reports whether ev may change the source's pods, and notes a
// watched directory that went away.
func (s *fileSource) handleEvent(ev fsnotify.Event) bool {
	name := filepath.Clean(ev.Name)
	if name == s.path {
		if s.watched == s.path && (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)) {
			_ = s.watcher.Remove(s.path)
			s.watched = ""
		}
		return true
	}
	return s.watched == s.path && filepath.Dir(name) == s.path && !strings.HasPrefix(filepath.Base(name), ".")
}

// drainEvents consumes the events already queued, so a burst of changes
// costs one relist.
func (s *fileSource) drainEvents(events <-chan fsnotify.Event) {
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			s.handleEvent(ev)
		default:
			return
		}
	}
}

// relist reads every manifest and pushes the resulting snapshot. fromWatch
// says a file system event triggered it: a manifest that fails to read then
// keeps its last good pods (it may be half written) until the next periodic
// relist. It returns false once ctx is done.
func (s *fileSource) relist(ctx context.Context, fromWatch bool) bool {
	s.ensureWatch()
	files, skipped, err := listManifestFiles(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !s.missing {
			klog.InfoS("Static pod path does not exist; will look again at the next relist", "path", s.path)
		}
		s.missing = true
	case err != nil:
		klog.ErrorS(err, "Cannot list static pod path; keeping the current pods", "path", s.path)
		return ctx.Err() == nil
	default:
		if s.missing {
			klog.InfoS("Static pod path appeared", "path", s.path)
		}
		s.missing = false
	}

	o := staticOrigin{NodeName: s.nodeName, Source: FileSource, Now: s.clock.Now(), LocalObjects: s.localObjects, ReadObjects: s.objects != nil}
	results := readManifests(files, o)
	if s.objectsOnly {
		ignorePods(results)
	}
	pods, good, problems := assembleSnapshot(results, s.lastGood, fromWatch)
	for path, reason := range skipped {
		problems[path] = manifestProblem{err: errors.New(reason)}
	}
	s.lastGood = good
	var entries []localobjects.Entry
	if s.objects != nil {
		var objProblems map[string]error
		entries, s.lastGoodObjs, objProblems = assembleObjects(results, s.lastGoodObjs, fromWatch)
		addObjectProblems(problems, objProblems)
	}
	s.logProblems(problems)
	klog.V(4).InfoS("Static pod file source relisted", "path", s.path, "files", len(files), "pods", len(pods), "objects", len(entries), "fromWatch", fromWatch)

	if s.objects != nil {
		// Objects first: a new pod finds the objects of the same relist.
		s.objects(entries)
	}
	if s.objectsOnly {
		return ctx.Err() == nil
	}
	select {
	case s.out <- pods:
		return true
	case <-ctx.Done():
		return false
	}
}

// logProblems logs each problem once, until it changes or goes away.
func (s *fileSource) logProblems(problems map[string]manifestProblem) {
	for path := range s.logged {
		if _, still := problems[path]; !still {
			klog.InfoS("Static pod manifest is usable again", "path", path)
			delete(s.logged, path)
		}
	}
	paths := make([]string, 0, len(problems))
	for path := range problems {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		p := problems[path]
		key := fmt.Sprintf("%t/%v", p.keptLastGood, p.err)
		if s.logged[path] == key {
			continue
		}
		s.logged[path] = key
		switch {
		case p.keptLastGood:
			klog.ErrorS(p.err, "Invalid static pod manifest; keeping the pods it last defined until the next full relist", "path", path)
		case p.documentsOnly:
			klog.ErrorS(p.err, "Skipping invalid documents of manifest", "path", path)
		default:
			klog.ErrorS(p.err, "Skipping static pod manifest", "path", path)
		}
	}
}

// listManifestFiles returns the manifest files at path in name order: path
// itself when it is a file, else the regular files in it whose names do not
// start with ".". skipped maps entries it will not read to the reason.
func listManifestFiles(path string) (files []string, skipped map[string]string, err error) {
	skipped = map[string]string{}
	info, err := os.Stat(path)
	if err != nil {
		return nil, skipped, err
	}
	if info.Mode().IsRegular() {
		return []string{path}, skipped, nil
	}
	if !info.IsDir() {
		return nil, skipped, fmt.Errorf("%s is neither a directory nor a regular file (mode %v)", path, info.Mode())
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, skipped, err
	}
	for _, e := range entries { // os.ReadDir sorts by name
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		full := filepath.Join(path, e.Name())
		info, err := os.Stat(full) // follows symlinks
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Removed since ReadDir, or a dangling symlink.
		case err != nil:
			skipped[full] = fmt.Sprintf("cannot stat: %v", err)
		case info.IsDir():
			skipped[full] = "is a directory; static pod directories are not read recursively"
		case !info.Mode().IsRegular():
			skipped[full] = fmt.Sprintf("not a regular file (mode %v)", info.Mode())
		default:
			files = append(files, full)
		}
	}
	return files, skipped, nil
}

// manifestResult is the outcome of reading one manifest file.
type manifestResult struct {
	path string
	pods []*v1.Pod
	// err fails the file's pods (and everything in it when unreadable).
	err        error
	unreadable bool
	objects    []objectDoc
}

// readManifests reads and parses every file. A file that vanished since it
// was listed is left out.
func readManifests(files []string, o staticOrigin) []manifestResult {
	results := make([]manifestResult, 0, len(files))
	for _, path := range files {
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			results = append(results, manifestResult{path: path, err: err, unreadable: true})
			continue
		}
		fo := o
		fo.Location = path
		d := parseManifest(data, fo)
		results = append(results, manifestResult{path: path, pods: d.pods, err: d.err, objects: d.objects})
	}
	return results
}

// manifestProblem is why (part of) a manifest was not used.
type manifestProblem struct {
	err error
	// keptLastGood says the manifest's previous pods were used instead.
	keptLastGood bool
	// documentsOnly says only some ConfigMap or Secret documents were
	// left out; the rest of the manifest is used.
	documentsOnly bool
}

// assembleSnapshot merges per-file results, in the given (name) order, into
// one snapshot. A pod whose namespace/name or UID was already taken by an
// earlier file (or an earlier document of the same file) is left out. A
// failed file contributes nothing, unless keepLastGood is set and it has a
// last good read, whose pods are then used. It returns the snapshot, the
// new last good reads, and the problems per file.
func assembleSnapshot(results []manifestResult, lastGood map[string][]*v1.Pod, keepLastGood bool) ([]*v1.Pod, map[string][]*v1.Pod, map[string]manifestProblem) {
	pods := []*v1.Pod{}
	good := map[string][]*v1.Pod{}
	problems := map[string]manifestProblem{}
	names := map[string]string{}
	uids := map[types.UID]string{}
	for _, r := range results {
		filePods := r.pods
		if r.err != nil {
			previous, ok := lastGood[r.path]
			kept := keepLastGood && ok
			problems[r.path] = manifestProblem{err: r.err, keptLastGood: kept}
			if !kept {
				continue
			}
			filePods = previous
		}
		good[r.path] = filePods
		var dups []string
		for _, pod := range filePods {
			fullName := pod.Namespace + "/" + pod.Name
			if first, taken := names[fullName]; taken {
				dups = append(dups, fmt.Sprintf("pod %q is already defined by %s", fullName, first))
				continue
			}
			if first, taken := uids[pod.UID]; taken {
				dups = append(dups, fmt.Sprintf("pod %q has UID %q, already used by %s", fullName, pod.UID, first))
				continue
			}
			names[fullName] = r.path
			uids[pod.UID] = r.path
			pods = append(pods, pod)
		}
		if len(dups) > 0 && r.err == nil {
			problems[r.path] = manifestProblem{err: fmt.Errorf("duplicate pods skipped: %s", strings.Join(dups, "; "))}
		}
	}
	return pods, good, problems
}

// ignorePods drops the pods of an objects-only source's manifests,
// reporting them (ConfigMaps and Secrets are still used).
func ignorePods(results []manifestResult) {
	for i := range results {
		r := &results[i]
		if r.unreadable {
			continue
		}
		switch {
		case errors.Is(r.err, errNoObjects):
			r.err = errors.New("no ConfigMap or Secret found")
		case r.err != nil:
			r.err = fmt.Errorf("%w (only ConfigMaps and Secrets are read here)", r.err)
		case len(r.pods) > 0:
			r.err = fmt.Errorf("%d pod(s) ignored: pods are read from staticPodPath, this directory holds ConfigMaps and Secrets", len(r.pods))
		}
		r.pods = nil
	}
}

// assembleObjects merges the ConfigMap and Secret documents of the files,
// in name order, as the API server would take them: a valid object is
// used; an invalid one is left out, or, when it replaces an object the same
// file defined before, refused as an invalid update would be, the previous
// version kept (an immutable object that changed is refused the same way);
// an object an earlier file defined is left out. An unreadable file keeps
// its previous objects when keepLastGood (a watch event: it may be half
// written). It returns the objects, the objects used per file and the
// problems per file.
func assembleObjects(results []manifestResult, lastGood map[string]map[localobjects.Key]runtime.Object, keepLastGood bool) (
	[]localobjects.Entry, map[string]map[localobjects.Key]runtime.Object, map[string]error) {
	var entries []localobjects.Entry
	good := map[string]map[localobjects.Key]runtime.Object{}
	problems := map[string]error{}
	definedBy := map[localobjects.Key]string{}
	for _, r := range results {
		previous := lastGood[r.path]
		used := map[localobjects.Key]runtime.Object{}
		var errs []error
		use := func(key localobjects.Key, obj runtime.Object) {
			if first, taken := definedBy[key]; taken {
				errs = append(errs, fmt.Errorf("%s is already defined by %s", key, first))
				return
			}
			definedBy[key] = r.path
			used[key] = obj
			entries = append(entries, localobjects.Entry{Key: key, Object: obj, Path: r.path})
		}
		if r.unreadable {
			if keepLastGood {
				for _, key := range sortedObjectKeys(previous) {
					use(key, previous[key])
				}
			}
			good[r.path] = used
			continue
		}
		for _, d := range r.objects {
			prev, hadPrev := previous[d.key]
			switch {
			case d.err != nil && hadPrev && d.key.Name != "":
				errs = append(errs, fmt.Errorf("document %d: %w; its last valid version is kept", d.index, d.err))
				use(d.key, prev)
			case d.err != nil:
				errs = append(errs, fmt.Errorf("document %d: %w", d.index, d.err))
			case hadPrev:
				if verrs := localobjects.ValidateUpdate(d.obj, prev); len(verrs) > 0 {
					errs = append(errs, fmt.Errorf("document %d: %s %q: invalid update: %w; the previous version is kept", d.index, d.key.Kind, d.key.Name, verrs.ToAggregate()))
					use(d.key, prev)
					continue
				}
				use(d.key, d.obj)
			default:
				use(d.key, d.obj)
			}
		}
		good[r.path] = used
		if len(errs) > 0 {
			problems[r.path] = errors.Join(errs...)
		}
	}
	return entries, good, problems
}

// addObjectProblems adds the object problems of each file to its pod
// problems, so a file is reported on one line.
func addObjectProblems(problems map[string]manifestProblem, objProblems map[string]error) {
	for path, err := range objProblems {
		p, ok := problems[path]
		if !ok {
			problems[path] = manifestProblem{err: err, documentsOnly: true}
			continue
		}
		p.err = errors.Join(p.err, err)
		problems[path] = p
	}
}

func sortedObjectKeys(m map[localobjects.Key]runtime.Object) []localobjects.Key {
	keys := make([]localobjects.Key, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	return keys
}
