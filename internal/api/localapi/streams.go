package localapi

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// serveSubresource answers pods/log, pods/exec, pods/attach and
// pods/portforward by handing the request, translated, to the kubelet
// API's own handlers (/containerLogs, /exec, /attach, /portForward), as
// the API server proxies them to a kubelet.
func (s *Server) serveSubresource(w http.ResponseWriter, r *http.Request, rq request) {
	verb := verbGet
	if r.Method == http.MethodPost {
		verb = verbCreate
	}
	if (r.Method != http.MethodGet && r.Method != http.MethodPost) || !rq.res.allows(verb) {
		writeError(w, errMethodNotAllowed(strings.ToLower(r.Method), rq.res.name))
		return
	}
	pod, ok := s.findPod(rq.namespace, rq.name)
	if !ok {
		writeError(w, errNotFound("pods", rq.name))
		return
	}
	q := r.URL.Query()
	if rq.sub == "portforward" {
		if isWebSocket(r) {
			writeError(w, errWebSocket())
			return
		}
		fq := url.Values{}
		for _, p := range q["ports"] {
			fq.Add("port", p)
		}
		s.delegate(w, r, s.cfg.Streaming, "/portForward/"+pod.Namespace+"/"+s.kubeletName(pod.Name), fq)
		return
	}
	container, err := containerOf(pod, q.Get("container"))
	if err != nil {
		writeError(w, err)
		return
	}
	switch rq.sub {
	case "log":
		lq := url.Values{}
		for k, v := range q {
			if k != "container" {
				lq[k] = v
			}
		}
		s.delegate(w, r, s.cfg.ContainerLogs, "/containerLogs/"+pod.Namespace+"/"+s.kubeletName(pod.Name)+"/"+container, lq)
	case "exec", "attach":
		if isWebSocket(r) {
			writeError(w, errWebSocket())
			return
		}
		sq := url.Values{}
		for from, to := range map[string]string{"stdin": "input", "stdout": "output", "stderr": "error", "tty": "tty"} {
			if v := q.Get(from); v == "true" || v == "1" {
				sq.Set(to, "1")
			}
		}
		if rq.sub == "exec" {
			cmd := q["command"]
			if len(cmd) == 0 {
				writeError(w, apierrors.NewInvalid(v1.SchemeGroupVersion.WithKind("PodExecOptions").GroupKind(), "", nil))
				return
			}
			sq["command"] = cmd
		}
		s.delegate(w, r, s.cfg.Streaming, "/"+rq.sub+"/"+pod.Namespace+"/"+s.kubeletName(pod.Name)+"/"+container, sq)
	}
}

// containerOf picks the container a log, exec or attach request names, as
// the API server does: the only container when none is named.
func containerOf(pod *v1.Pod, name string) (string, error) {
	var names, inits []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.InitContainers {
		inits = append(inits, c.Name)
	}
	var ephemeral []string
	for _, c := range pod.Spec.EphemeralContainers {
		ephemeral = append(ephemeral, c.Name)
	}
	if name == "" {
		if len(names) == 1 {
			return names[0], nil
		}
		msg := fmt.Sprintf("a container name must be specified for pod %s, choose one of: %v", pod.Name, names)
		if len(inits) > 0 {
			msg += fmt.Sprintf(" or one of the init containers: %v", inits)
		}
		return "", errBadRequest("%s", msg)
	}
	for _, list := range [][]string{names, inits, ephemeral} {
		for _, n := range list {
			if n == name {
				return name, nil
			}
		}
	}
	return "", errBadRequest("container %s is not valid for pod %s", name, pod.Name)
}

func isWebSocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// errWebSocket refuses a WebSocket stream: the runtime's streaming server
// behind the kubelet speaks SPDY (and WebSocket only up to the v4 channel
// protocol, without v5's close signal), and this API does not translate.
// Any answer but 101 makes kubectl fall back to SPDY, as it does with an
// API server that predates WebSocket streaming.
func errWebSocket() error {
	return statusError(http.StatusBadRequest, metav1.StatusReasonBadRequest,
		"WebSocket streaming is not served by the standalone kubelet's API: use SPDY (kubectl falls back to it)")
}

// delegate hands r to h at path with query, turning an error h answers
// in plain text into the API server's Status.
func (s *Server) delegate(w http.ResponseWriter, r *http.Request, h http.Handler, path string, query url.Values) {
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath, r2.URL.RawQuery = path, "", query.Encode()
	r2.RequestURI = r2.URL.RequestURI()
	sw := &statusWriter{ResponseWriter: w, pod: pathPod(path)}
	h.ServeHTTP(sw, r2)
	sw.flushError()
}

// pathPod is the pod a kubelet API path names.
func pathPod(path string) string {
	parts := strings.Split(path, "/")
	if len(parts) > 3 {
		return parts[3]
	}
	return ""
}

// statusWriter passes a response through, but for an error status, whose
// plain-text body it turns into a Status. It unwraps to the original
// writer, so flushing (log follow) and hijacking (streams) work.
type statusWriter struct {
	http.ResponseWriter
	pod  string
	code int
	body bytes.Buffer
}

func (sw *statusWriter) WriteHeader(code int) {
	if code >= 400 && sw.code == 0 {
		sw.code = code
		return
	}
	sw.ResponseWriter.WriteHeader(code)
}

func (sw *statusWriter) Write(p []byte) (int, error) {
	if sw.code != 0 {
		if sw.body.Len() < 64<<10 {
			sw.body.Write(p)
		}
		if sw.body.Len() >= 64<<10 {
			sw.flushError()
		}
		return len(p), nil
	}
	return sw.ResponseWriter.Write(p)
}

func (sw *statusWriter) Unwrap() http.ResponseWriter { return sw.ResponseWriter }

// Flush sends a buffered error, or flushes the stream.
func (sw *statusWriter) Flush() {
	if sw.code != 0 {
		return
	}
	if f, ok := sw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// flushError writes the buffered error as a Status, once.
func (sw *statusWriter) flushError() {
	if sw.code == 0 || sw.code == -1 {
		return
	}
	code := sw.code
	sw.code = -1
	msg := strings.TrimSpace(sw.body.String())
	for _, h := range []string{"Content-Type", "Content-Length", "X-Content-Type-Options"} {
		sw.ResponseWriter.Header().Del(h)
	}
	// As the API server's GenericHttpResponseChecker reports a kubelet's
	// refusal.
	var err error
	switch code {
	case http.StatusInternalServerError:
		err = apierrors.NewInternalError(errors.New(msg))
	case http.StatusBadRequest:
		err = apierrors.NewBadRequest(msg)
	default:
		err = apierrors.NewGenericServerResponse(code, "", v1.Resource("pods"), sw.pod, msg, 0, false)
	}
	writeError(sw.ResponseWriter, err)
}
