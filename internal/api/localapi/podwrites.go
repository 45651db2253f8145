package localapi

import (
	"fmt"
	"net/http"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/seed-kubelet/kubelet/internal/atomicfile"
	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
	"github.com/seed-kubelet/kubelet/internal/sources"
)

// kubeletAnnotations are the annotations the kubelet gives a static pod;
// they never go into its manifest.
var kubeletAnnotations = []string{podutil.ConfigHashAnnotationKey, podutil.ConfigSourceAnnotationKey,
	podutil.ConfigFirstSeenAnnotationKey, podutil.ConfigMirrorAnnotationKey}

// manifestPod is the manifest a pod object is written as: its spec,
// labels and annotations; what the kubelet adds when it reads the
// manifest (identity, binding, status, its annotations) is left out.
func (s *Server) manifestPod(p *v1.Pod) *v1.Pod {
	out := &v1.Pod{ObjectMeta: cleanMeta(p.ObjectMeta), Spec: *p.Spec.DeepCopy()}
	if out.Annotations != nil {
		out.Annotations = copyMap(out.Annotations)
		for _, k := range kubeletAnnotations {
			delete(out.Annotations, k)
		}
		if len(out.Annotations) == 0 {
			out.Annotations = nil
		}
	}
	if out.Spec.NodeName == s.cfg.NodeName {
		out.Spec.NodeName = ""
	}
	return out
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// writePod creates, replaces, patches or deletes a pod's manifest.
func (s *Server) writePod(w http.ResponseWriter, r *http.Request, rq request, verb string) error {
	if s.cfg.StaticPodPath == "" {
		return errMethodNotAllowed(verb, "pods")
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if verb == verbCreate {
		return s.createPod(w, r, rq)
	}
	existing, ok := s.findPod(rq.namespace, rq.name)
	if !ok {
		return errNotFound("pods", rq.name)
	}
	name := existing.Name
	if src := existing.Annotations[podutil.ConfigSourceAnnotationKey]; src != sources.FileSource {
		return apierrors.NewForbidden(v1.Resource("pods"), existing.Name,
			fmt.Errorf("the pod comes from the %s source (staticPodURL), not from a manifest in staticPodPath", src))
	}
	doc, err := findDocument(s.cfg.StaticPodPath, "Pod", rq.namespace, name)
	if err != nil {
		return err
	}
	if doc == nil {
		return apierrors.NewConflict(v1.Resource("pods"), existing.Name, fmt.Errorf("no manifest in %s defines it any more", s.cfg.StaticPodPath))
	}
	if doc.inList {
		return apierrors.NewForbidden(v1.Resource("pods"), existing.Name, fmt.Errorf("it is an item of a PodList in %s: edit that file", doc.path))
	}
	switch verb {
	case verbDelete:
		return s.deletePod(w, r, existing, doc)
	case verbUpdate:
		data, err := readBody(r)
		if err != nil {
			return err
		}
		pod, err := decodePod(w, r, data, rq.namespace)
		if err != nil {
			return err
		}
		if err := checkName(pod.Name, rq.name, name, s.kubeletName(name)); err != nil {
			return err
		}
		if err := checkResourceVersion("pods", existing.Name, pod.ResourceVersion, existing.ResourceVersion); err != nil {
			return err
		}
		pod.Name = name
		return s.replacePod(w, r, pod, doc, http.StatusOK)
	case verbPatch:
		patch, err := readBody(r)
		if err != nil {
			return err
		}
		current, err := doc.json()
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("read the manifest of pod %s in %s: %w", existing.Name, doc.path, err))
		}
		patched, err := applyPatch(r.Header.Get("Content-Type"), current, patch, &v1.Pod{})
		if err != nil {
			return err
		}
		pod, err := decodePod(w, r, patched, rq.namespace)
		if err != nil {
			return err
		}
		if err := checkName(pod.Name, name); err != nil {
			return err
		}
		if err := checkResourceVersion("pods", existing.Name, pod.ResourceVersion, existing.ResourceVersion); err != nil {
			return err
		}
		return s.replacePod(w, r, pod, doc, http.StatusOK)
	}
	return errMethodNotAllowed(verb, "pods")
}

// decodePod decodes a request's pod (as the API server would) and checks
// it belongs to namespace, the request path's.
func decodePod(w http.ResponseWriter, r *http.Request, data []byte, namespace string) (*v1.Pod, error) {
	pod := &v1.Pod{}
	if err := decodeObject(w, r, data, "Pod", pod); err != nil {
		return nil, err
	}
	if err := checkNamespace(&pod.ObjectMeta, namespace); err != nil {
		return nil, err
	}
	return pod, nil
}

// createPod writes a new pod's manifest, <staticPodPath>/pod_<ns>_<name>.yaml.
func (s *Server) createPod(w http.ResponseWriter, r *http.Request, rq request) error {
	data, err := readBody(r)
	if err != nil {
		return err
	}
	pod, err := decodePod(w, r, data, rq.namespace)
	if err != nil {
		return err
	}
	nameFor(&pod.ObjectMeta)
	manifest := s.manifestPod(pod)
	// Validated before the name goes into a path.
	if _, errs := sources.PrepareManifestPod(manifest, s.cfg.NodeName, s.cfg.StaticPodPath, true, s.cfg.Clock.Now()); len(errs) > 0 {
		return invalid("Pod", pod.Name, errs)
	}
	if _, ok := s.findPod(pod.Namespace, pod.Name); ok {
		return apierrors.NewAlreadyExists(v1.Resource("pods"), pod.Name)
	}
	if doc, err := findDocument(s.cfg.StaticPodPath, "Pod", pod.Namespace, pod.Name); err != nil {
		return err
	} else if doc != nil {
		return apierrors.NewAlreadyExists(v1.Resource("pods"), pod.Name)
	}
	path, err := newManifestPath(s.cfg.StaticPodPath, "pod", pod.Namespace, pod.Name)
	if err != nil {
		return errMethodNotAllowed(verbCreate, "pods (staticPodPath: "+err.Error()+")")
	}
	return s.putPod(w, r, manifest, path, func(data []byte) error { return atomicfile.Write(path, data, manifestMode) }, http.StatusCreated)
}

// replacePod writes pod's manifest in place of doc.
func (s *Server) replacePod(w http.ResponseWriter, r *http.Request, pod *v1.Pod, doc *document, code int) error {
	return s.putPod(w, r, s.manifestPod(pod), doc.path, doc.replace, code)
}

// putPod validates manifest as the file source will read it from path,
// writes it and answers with the pod the kubelet runs from it, once the
// kubelet has taken it in (or, failing that within WriteWait, as it
// will run it).
func (s *Server) putPod(w http.ResponseWriter, r *http.Request, manifest *v1.Pod, path string, write func([]byte) error, code int) error {
	data, err := manifestYAML(manifest, "Pod")
	if err != nil {
		return err
	}
	// What the file source will read back.
	readBack := &v1.Pod{}
	if err := yaml.Unmarshal(data, readBack); err != nil {
		return apierrors.NewInternalError(err)
	}
	readBack.TypeMeta = metav1.TypeMeta{}
	prepared, errs := sources.PrepareManifestPod(readBack, s.cfg.NodeName, path, true, s.cfg.Clock.Now())
	if len(errs) > 0 {
		return invalid("Pod", manifest.Name, errs)
	}
	if isDryRun(r) {
		writeJSON(w, code, withKind(s.servedPod(prepared, nil), "Pod"))
		return nil
	}
	if err := write(data); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("write %s: %w", path, err))
	}
	// Other writes need not wait while this one waits to be seen.
	s.writeMu.Unlock()
	defer s.writeMu.Lock()
	ctx, cancel := s.writeContext(r)
	defer cancel()
	key := prepared.Namespace + "/" + manifest.Name
	var served runtime.Object
	s.pods.waitFor(ctx, func(items map[string]runtime.Object) bool {
		obj, ok := items[key]
		if ok && obj.(*v1.Pod).UID == prepared.UID {
			served = obj
		}
		return served != nil
	})
	if served == nil {
		p := s.servedPod(prepared, nil)
		p.CreationTimestamp = metav1.NewTime(s.cfg.Clock.Now())
		served = p
		warn(w, fmt.Sprintf("the kubelet has not started pod %s yet; see its log", manifest.Name))
	}
	writeJSON(w, code, withKind(served, "Pod"))
	return nil
}

// deletePod removes a pod's document from its manifest; the pod stops as
// it does when its file goes, with its own grace period.
func (s *Server) deletePod(w http.ResponseWriter, r *http.Request, pod *v1.Pod, doc *document) error {
	opts, err := deleteOptions(r)
	if err != nil {
		return err
	}
	if err := checkPreconditions("pods", pod.Name, opts, pod); err != nil {
		return err
	}
	out := pod.DeepCopy()
	grace := int64(v1.DefaultTerminationGracePeriodSeconds)
	if out.Spec.TerminationGracePeriodSeconds != nil {
		grace = *out.Spec.TerminationGracePeriodSeconds
	}
	if opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds != grace {
		warn(w, fmt.Sprintf("gracePeriodSeconds=%d is not honoured: a static pod stops with its terminationGracePeriodSeconds (%d)", *opts.GracePeriodSeconds, grace))
	}
	if out.DeletionTimestamp == nil {
		now := metav1.NewTime(s.cfg.Clock.Now())
		out.DeletionTimestamp, out.DeletionGracePeriodSeconds = &now, &grace
	}
	if len(opts.DryRun) == 0 {
		if err := doc.replace(nil); err != nil {
			return apierrors.NewInternalError(fmt.Errorf("remove pod %s from %s: %w", pod.Name, doc.path, err))
		}
		// The pod is served Terminating until it has stopped.
		// Other writes need not wait while this one waits to be seen.
		s.writeMu.Unlock()
		defer s.writeMu.Lock()
		ctx, cancel := s.writeContext(r)
		defer cancel()
		s.pods.waitFor(ctx, func(items map[string]runtime.Object) bool {
			obj, ok := items[pod.Namespace+"/"+pod.Name]
			return !ok || obj.(*v1.Pod).UID != pod.UID || obj.(*v1.Pod).DeletionTimestamp != nil
		})
		if obj, ok := s.pods.get(pod.Namespace, pod.Name); ok && obj.(*v1.Pod).UID == pod.UID && obj.(*v1.Pod).DeletionTimestamp != nil {
			out = obj.(*v1.Pod).DeepCopy()
		}
	}
	writeJSON(w, http.StatusOK, withKind(out, "Pod"))
	return nil
}
