package localapi

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/sources"
)

// currentPods is the pods resource: every pod the kubelet runs, named as
// its manifest names it, with its status, created when the kubelet first
// saw it; a pod that left its
// source but is still stopping is served Terminating (deletionTimestamp
// set when it was first seen so) until its containers are stopped, as the
// API server keeps a deleted pod until its kubelet is done with it.
// Called with the pods collection's lock held.
func (s *Server) currentPods() []runtime.Object {
	desired := s.cfg.Pods.List()
	states := s.cfg.Workers.States()
	var out []runtime.Object
	names := map[string]bool{}
	uids := map[types.UID]bool{}
	for _, p := range desired {
		served := s.servedPod(p, nil)
		out = append(out, served)
		names[served.Namespace+"/"+served.Name] = true
		uids[p.UID] = true
	}
	now := s.cfg.Clock.Now()
	for uid, st := range states {
		if uids[uid] || st.Pod == nil || st.State == podworkers.Terminated || names[st.Pod.Namespace+"/"+s.manifestName(st.Pod.Name)] {
			delete(s.deleting, uid)
			continue
		}
		since, ok := s.deleting[uid]
		if !ok {
			since = now
			s.deleting[uid] = since
		}
		served := s.servedPod(st.Pod, &since)
		out = append(out, served)
		names[served.Namespace+"/"+served.Name] = true
	}
	for uid := range s.deleting {
		if _, ok := states[uid]; !ok {
			delete(s.deleting, uid)
		}
	}
	return out
}

// servedPod is pod as served: a copy named as its manifest names it (the
// name a user applies and deletes it by; the kubelet runs it as
// <name>-<node>, the name its mirror pod would have in a cluster), with
// its current status and creationTimestamp, and a deletionTimestamp while
// it stops.
func (s *Server) servedPod(pod *v1.Pod, deleting *time.Time) *v1.Pod {
	p := pod.DeepCopy()
	p.Name = s.manifestName(p.Name)
	if st, ok := s.cfg.Statuses.Get(p.UID); ok {
		p.Status = st
	}
	if p.CreationTimestamp.IsZero() {
		if seen, err := time.Parse(time.RFC3339Nano, p.Annotations[podutil.ConfigFirstSeenAnnotationKey]); err == nil {
			p.CreationTimestamp = metav1.NewTime(seen)
		}
	}
	if deleting != nil && p.DeletionTimestamp == nil {
		t := metav1.NewTime(*deleting)
		p.DeletionTimestamp = &t
		grace := int64(v1.DefaultTerminationGracePeriodSeconds)
		if p.Spec.TerminationGracePeriodSeconds != nil {
			grace = *p.Spec.TerminationGracePeriodSeconds
		}
		p.DeletionGracePeriodSeconds = &grace
	}
	p.TypeMeta = metav1.TypeMeta{}
	return p
}

// findPod finds a pod by its name (web) or, failing that, by the name the
// kubelet runs it under (web-node1), which its logs and events show.
func (s *Server) findPod(namespace, name string) (*v1.Pod, bool) {
	if obj, ok := s.pods.get(namespace, name); ok {
		return obj.(*v1.Pod), true
	}
	if manifest, ok := sources.ManifestPodName(name, s.cfg.NodeName); ok {
		if obj, ok := s.pods.get(namespace, manifest); ok {
			return obj.(*v1.Pod), true
		}
	}
	return nil, false
}

// kubeletName is the name the kubelet runs a served pod under.
func (s *Server) kubeletName(served string) string {
	return sources.StaticPodName(served, s.cfg.NodeName)
}

// manifestName is the name a manifest gives the pod the kubelet runs as
// name; a name that is not a static pod's is its own.
func (s *Server) manifestName(name string) string {
	if manifest, ok := sources.ManifestPodName(name, s.cfg.NodeName); ok {
		return manifest
	}
	return name
}
