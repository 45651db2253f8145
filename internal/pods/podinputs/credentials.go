package podinputs

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/runtime/credentialprovider"
	"github.com/seed-kubelet/kubelet/internal/runtime/imageref"
)

// ReasonFailedToRetrieveImagePullSecret is upstream's event reason for pull
// secrets that could not be read.
const ReasonFailedToRetrieveImagePullSecret = "FailedToRetrieveImagePullSecret"

// SecretGetter reads a secret; a missing one is reported with an error for
// which apierrors.IsNotFound is true. Source and localobjects.Store have it.
type SecretGetter interface {
	Secret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// Credentials returns the registry credentials in the pod's imagePullSecrets
// that apply to image, most specific match first; see PullSecretCredentials.
func (s *Source) Credentials(ctx context.Context, pod *v1.Pod, image string) []*runtimeapi.AuthConfig {
	return PullSecretCredentials(ctx, s, s.recorder, pod, image)
}

// PullSecretCredentials returns the registry credentials in the pod's
// imagePullSecrets, read from secrets, that apply to image, most specific
// match first. Secrets that cannot be read are logged (and reported on the
// pod through recorder, when not nil) and skipped, as are malformed ones:
// the pull then goes ahead with what is left, or anonymously.
//
// ServerAddress is left empty, as upstream does: containerd drops an
// AuthConfig whose ServerAddress host differs from the host it pulls from
// (registry-1.docker.io for Docker Hub, a mirror, a glob's expansion).
func PullSecretCredentials(ctx context.Context, secrets SecretGetter, recorder events.Recorder, pod *v1.Pod, image string) []*runtimeapi.AuthConfig {
	var ring credentialprovider.Keyring
	var failed []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" {
			// Old API validation let empty names through; upstream ignores them.
			continue
		}
		secret, err := secrets.Secret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			klog.InfoS("Unable to retrieve pull secret, the image pull may not succeed.", "pod", klog.KObj(pod), "secret", klog.KRef(pod.Namespace, ref.Name), "err", err)
			failed = append(failed, ref.Name)
			continue
		}
		cfg, ok, err := dockerConfigFromSecret(secret)
		if err == nil && ok {
			err = ring.Add(cfg)
		}
		if err != nil {
			klog.ErrorS(err, "Ignoring malformed pull secret", "pod", klog.KObj(pod), "secret", klog.KObj(secret))
		}
	}
	if len(failed) > 0 && recorder != nil {
		recorder.Eventf(pod, v1.EventTypeWarning, ReasonFailedToRetrieveImagePullSecret,
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(failed, ", "))
	}
	return ring.Lookup(imageref.Repository(image))
}

// dockerConfigFromSecret parses a kubernetes.io/dockerconfigjson or
// kubernetes.io/dockercfg secret. ok is false for other types and for secrets
// without the type's key, which upstream ignores too.
func dockerConfigFromSecret(secret *v1.Secret) (cfg credentialprovider.DockerConfig, ok bool, err error) {
	if data := secret.Data[v1.DockerConfigJsonKey]; secret.Type == v1.SecretTypeDockerConfigJson && len(data) > 0 {
		cfg, err := credentialprovider.ParseDockerConfigJSON(data)
		if err != nil {
			return nil, false, fmt.Errorf("parse %s: %w", v1.DockerConfigJsonKey, err)
		}
		return cfg, true, nil
	}
	if data := secret.Data[v1.DockerConfigKey]; secret.Type == v1.SecretTypeDockercfg && len(data) > 0 {
		cfg, err := credentialprovider.ParseDockercfg(data)
		if err != nil {
			return nil, false, fmt.Errorf("parse %s: %w", v1.DockerConfigKey, err)
		}
		return cfg, true, nil
	}
	return nil, false, nil
}
