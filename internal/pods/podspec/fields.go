package podspec

import (
	"fmt"
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Class says what this kubelet does with a pod field that is set.
type Class int

const (
	// Honoured: the kubelet acts on the field as upstream does. A field of
	// struct type is walked: each field of its type is classified too,
	// unless Whole is set.
	Honoured Class = iota + 1
	// Delegated: nothing for a kubelet to do; the API server, the
	// scheduler or a controller acts on it, or it is for another OS.
	Delegated
	// Rejected: a pod that sets the field is rejected at admission (phase
	// Failed) with Field.Reason and a message naming the field. No field
	// is today (runtimeClassName was, until RuntimeClasses were resolved);
	// the class stays for the next field the kubelet must refuse.
	Rejected
	// ContainerError: the container cannot be created; it waits with
	// CreateContainerConfigError and a message naming the field.
	ContainerError
	// Waits: the pod waits in ContainerCreating with FailedMount events,
	// and an UnsupportedField warning names the field.
	Waits
	// Warned: the pod runs without it, and an UnsupportedField warning
	// names the field.
	Warned
)

func (c Class) String() string {
	switch c {
	case Honoured:
		return "honoured"
	case Delegated:
		return "delegated"
	case Rejected:
		return "rejected"
	case ContainerError:
		return "container error"
	case Waits:
		return "waits"
	case Warned:
		return "warned"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Field is the classification of one field of a pod spec type.
type Field struct {
	Class Class
	// Whole: an Honoured struct field handed over as a whole (to a
	// library or the runtime); its type's fields are not walked.
	Whole bool
	// Reason is the status reason of a Rejected field.
	Reason string
	// Note says where the field is acted on, or why it is not.
	Note string
}

func honoured(note string) Field  { return Field{Class: Honoured, Note: note} }
func whole(note string) Field     { return Field{Class: Honoured, Whole: true, Note: note} }
func delegated(note string) Field { return Field{Class: Delegated, Note: note} }
func waits(note string) Field     { return Field{Class: Waits, Note: note} }
func warned(note string) Field    { return Field{Class: Warned, Note: note} }

// unsupportedVolume is every volume type without a plugin here: the volume
// manager reports FailedMount and the pod waits, as upstream's does for a
// volume whose plugin (or CSI driver) is missing.
var unsupportedVolume = waits("no volume plugin in this kubelet: FailedMount, the pod waits")

// Fields classifies every field of the pod spec types the kubelet reads,
// keyed "GoType.jsonName": the PodSpec and, below the fields it honours,
// Container, EphemeralContainer, PodSecurityContext, SecurityContext,
// Volume and its sources, probes, hooks, environment and mounts. A new API
// field fails TestEveryPodSpecFieldClassified until it is added here.
var Fields = withEphemeral(map[string]Field{
	// PodSpec.
	"PodSpec.volumes":                       honoured("volume manager (internal/volume)"),
	"PodSpec.initContainers":                honoured("kuberuntime: one at a time; restartable ones as sidecars"),
	"PodSpec.containers":                    honoured("kuberuntime"),
	"PodSpec.ephemeralContainers":           honoured("kuberuntime: started when added through pods/ephemeralcontainers"),
	"PodSpec.restartPolicy":                 honoured("kuberuntime.ComputePodActions"),
	"PodSpec.terminationGracePeriodSeconds": honoured("kuberuntime.KillPod"),
	"PodSpec.activeDeadlineSeconds":         honoured("podsync: DeadlineExceeded"),
	"PodSpec.dnsPolicy":                     honoured("criconfig.PodDNSConfig"),
	"PodSpec.nodeSelector":                  honoured("admission: NodeAffinity predicate"),
	"PodSpec.serviceAccountName":            honoured("podinputs: TokenRequest for projected tokens"),
	"PodSpec.serviceAccount":                delegated("deprecated alias the API server copies to serviceAccountName"),
	"PodSpec.automountServiceAccountToken":  delegated("the API server's ServiceAccount admission adds (or not) the kube-api-access volume"),
	"PodSpec.nodeName":                      honoured("pod sources (pods bound to this node), admission NodeName predicate"),
	"PodSpec.hostNetwork":                   honoured("criconfig namespace options"),
	"PodSpec.hostPID":                       honoured("criconfig namespace options"),
	"PodSpec.hostIPC":                       honoured("criconfig namespace options"),
	"PodSpec.shareProcessNamespace":         honoured("criconfig namespace options"),
	"PodSpec.securityContext":               honoured("criconfig security context, volume ownership"),
	"PodSpec.imagePullSecrets":              honoured("podinputs.Credentials"),
	"PodSpec.hostname":                      honoured("criconfig hostname"),
	"PodSpec.subdomain":                     honoured("criconfig hostname and /etc/hosts"),
	"PodSpec.affinity":                      whole("admission: required node affinity (component-helpers); the rest is the scheduler's"),
	"PodSpec.schedulerName":                 delegated("scheduler"),
	"PodSpec.tolerations":                   whole("admission: NoExecute taints; tolerationSeconds is the taint-eviction controller's"),
	"PodSpec.hostAliases":                   honoured("criconfig /etc/hosts"),
	"PodSpec.priorityClassName":             honoured("critical pods (system-node-critical)"),
	"PodSpec.priority":                      honoured("critical pods, eviction ranking, graceful node shutdown order"),
	"PodSpec.dnsConfig":                     honoured("criconfig.PodDNSConfig"),
	"PodSpec.readinessGates":                honoured("podstatus: Ready waits for the gates"),
	"PodSpec.runtimeClassName":              honoured("runtimeclass: the node.k8s.io/v1 class's CRI handler; standalone runs the default handler with an UnsupportedField warning, as upstream runs it"),
	"PodSpec.enableServiceLinks":            honoured("podinputs service environment"),
	"PodSpec.preemptionPolicy":              delegated("scheduler"),
	"PodSpec.overhead":                      honoured("pod cgroup, sandbox resources, eviction"),
	"PodSpec.topologySpreadConstraints":     delegated("scheduler"),
	"PodSpec.setHostnameAsFQDN":             honoured("criconfig hostname"),
	"PodSpec.os":                            honoured("admission: PodOSNotSupported unless linux"),
	"PodSpec.hostUsers":                     honoured("criconfig user namespace options"),
	"PodSpec.schedulingGates":               delegated("scheduler: a gated pod is never bound"),
	"PodSpec.resourceClaims":                warned("no dynamic resource allocation: claimed devices are not prepared nor handed to containers"),
	"PodSpec.resources":                     honoured("pod-level resources: pod cgroup, QoS, container limits"),
	"PodSpec.hostnameOverride":              honoured("criconfig hostname"),
	"PodSpec.schedulingGroup":               delegated("scheduler (workload-aware scheduling)"),
	"PodOS.name":                            honoured("admission"),
	"LocalObjectReference.name":             honoured("the referenced object"),
	"HostAlias.ip":                          honoured("criconfig /etc/hosts"),
	"HostAlias.hostnames":                   honoured("criconfig /etc/hosts"),
	"PodDNSConfig.nameservers":              honoured("criconfig.PodDNSConfig"),
	"PodDNSConfig.searches":                 honoured("criconfig.PodDNSConfig"),
	"PodDNSConfig.options":                  honoured("criconfig.PodDNSConfig"),
	"PodDNSConfigOption.name":               honoured("criconfig.PodDNSConfig"),
	"PodDNSConfigOption.value":              honoured("criconfig.PodDNSConfig"),
	"PodReadinessGate.conditionType":        honoured("podstatus"),

	// PodSecurityContext.
	"PodSecurityContext.seLinuxOptions":           honoured("CRI sandbox and container SELinux labels"),
	"PodSecurityContext.windowsOptions":           delegated("Windows only; ignored on Linux as upstream"),
	"PodSecurityContext.runAsUser":                honoured("criconfig"),
	"PodSecurityContext.runAsGroup":               honoured("criconfig"),
	"PodSecurityContext.runAsNonRoot":             honoured("criconfig: CreateContainerConfigError for root"),
	"PodSecurityContext.supplementalGroups":       honoured("criconfig"),
	"PodSecurityContext.supplementalGroupsPolicy": honoured("criconfig, admission (Strict needs runtime support)"),
	"PodSecurityContext.fsGroup":                  honoured("volume ownership, supplemental group"),
	"PodSecurityContext.sysctls":                  honoured("CRI sandbox sysctls, admission allowlist"),
	"PodSecurityContext.fsGroupChangePolicy":      honoured("volume ownership"),
	"PodSecurityContext.seccompProfile":           honoured("criconfig"),
	"PodSecurityContext.appArmorProfile":          honoured("criconfig"),
	"PodSecurityContext.seLinuxChangePolicy": honoured("Recursive relabelling is the runtime's (seLinuxOptions); " +
		"MountOption only changes mounts of ReadWriteOncePod volumes on SELinux nodes, which this kubelet has not"),
	"Sysctl.name":                      honoured("CRI sandbox sysctls"),
	"Sysctl.value":                     honoured("CRI sandbox sysctls"),
	"SELinuxOptions.user":              honoured("CRI SELinux label"),
	"SELinuxOptions.role":              honoured("CRI SELinux label"),
	"SELinuxOptions.type":              honoured("CRI SELinux label"),
	"SELinuxOptions.level":             honoured("CRI SELinux label"),
	"SeccompProfile.type":              honoured("criconfig"),
	"SeccompProfile.localhostProfile":  honoured("criconfig: below <root-dir>/seccomp"),
	"AppArmorProfile.type":             honoured("criconfig"),
	"AppArmorProfile.localhostProfile": honoured("criconfig"),

	// Container (EphemeralContainerCommon gets the same, see withEphemeral).
	"Container.name":                         honoured("kuberuntime"),
	"Container.image":                        honoured("image puller"),
	"Container.command":                      honoured("criconfig"),
	"Container.args":                         honoured("criconfig"),
	"Container.workingDir":                   honoured("criconfig"),
	"Container.ports":                        honoured("sandbox port mappings, named probe ports"),
	"Container.envFrom":                      honoured("criconfig environment"),
	"Container.env":                          honoured("criconfig environment"),
	"Container.resources":                    honoured("criconfig resources, pod cgroup, QoS, admission"),
	"Container.resizePolicy":                 honoured("in-place resize"),
	"Container.restartPolicy":                honoured("sidecar (restartable init) containers"),
	"Container.restartPolicyRules":           warned("container restart rules are not implemented: the pod's restartPolicy applies"),
	"Container.volumeMounts":                 honoured("volume manager mounts"),
	"Container.volumeDevices":                whole("volume manager: block claims (CSI, local) mapped as CRI devices"),
	"Container.livenessProbe":                honoured("prober"),
	"Container.readinessProbe":               honoured("prober"),
	"Container.startupProbe":                 honoured("prober"),
	"Container.lifecycle":                    honoured("prober.RunHook, CRI stop signal"),
	"Container.terminationMessagePath":       honoured("kuberuntime termination message"),
	"Container.terminationMessagePolicy":     honoured("kuberuntime termination message"),
	"Container.imagePullPolicy":              honoured("image puller"),
	"Container.securityContext":              honoured("criconfig security context"),
	"Container.stdin":                        honoured("criconfig, attach"),
	"Container.stdinOnce":                    honoured("criconfig, attach"),
	"Container.tty":                          honoured("criconfig, attach"),
	"EphemeralContainer.targetContainerName": honoured("criconfig: the target's process namespace"),

	"ContainerPort.name":          honoured("named probe ports"),
	"ContainerPort.hostPort":      honoured("sandbox port mappings, admission NodePorts"),
	"ContainerPort.containerPort": honoured("sandbox port mappings"),
	"ContainerPort.protocol":      honoured("sandbox port mappings"),
	"ContainerPort.hostIP":        honoured("sandbox port mappings"),

	"EnvFromSource.prefix":          honoured("criconfig environment"),
	"EnvFromSource.configMapRef":    honoured("criconfig environment"),
	"EnvFromSource.secretRef":       honoured("criconfig environment"),
	"ConfigMapEnvSource.optional":   honoured("criconfig environment"),
	"SecretEnvSource.optional":      honoured("criconfig environment"),
	"EnvVar.name":                   honoured("criconfig environment"),
	"EnvVar.value":                  honoured("criconfig environment, $(VAR) expansion"),
	"EnvVar.valueFrom":              honoured("criconfig environment"),
	"EnvVarSource.fieldRef":         honoured("downward API"),
	"EnvVarSource.resourceFieldRef": honoured("downward API"),
	"EnvVarSource.configMapKeyRef":  honoured("podinputs config maps"),
	"EnvVarSource.secretKeyRef":     honoured("podinputs secrets"),
	"EnvVarSource.fileKeyRef": {Class: ContainerError,
		Note: "env files are not read by this kubelet: CreateContainerConfigError \"fileKeyRef is not supported by this kubelet\""},
	"ObjectFieldSelector.apiVersion":      honoured("downward API"),
	"ObjectFieldSelector.fieldPath":       honoured("downward API"),
	"ResourceFieldSelector.containerName": honoured("downward API"),
	"ResourceFieldSelector.resource":      honoured("downward API"),
	"ResourceFieldSelector.divisor":       honoured("downward API"),
	"ConfigMapKeySelector.key":            honoured("podinputs config maps"),
	"ConfigMapKeySelector.optional":       honoured("podinputs config maps"),
	"SecretKeySelector.key":               honoured("podinputs secrets"),
	"SecretKeySelector.optional":          honoured("podinputs secrets"),

	"ResourceRequirements.limits":         honoured("criconfig resources, pod cgroup"),
	"ResourceRequirements.requests":       honoured("criconfig resources, QoS, admission"),
	"ResourceRequirements.claims":         warned("no dynamic resource allocation: claimed devices are not handed to the container"),
	"ContainerResizePolicy.resourceName":  honoured("in-place resize"),
	"ContainerResizePolicy.restartPolicy": honoured("in-place resize"),

	"VolumeMount.name":              honoured("volume manager mounts"),
	"VolumeMount.readOnly":          honoured("CRI mount"),
	"VolumeMount.recursiveReadOnly": honoured("CRI mount; Enabled fails the container when the runtime cannot, as upstream"),
	"VolumeMount.mountPath":         honoured("CRI mount"),
	"VolumeMount.subPath":           honoured("volume manager subPath binds"),
	"VolumeMount.mountPropagation":  honoured("CRI mount propagation"),
	"VolumeMount.subPathExpr":       honoured("volume manager subPath binds"),

	"Probe.initialDelaySeconds":           honoured("prober"),
	"Probe.timeoutSeconds":                honoured("prober"),
	"Probe.periodSeconds":                 honoured("prober"),
	"Probe.successThreshold":              honoured("prober"),
	"Probe.failureThreshold":              honoured("prober"),
	"Probe.terminationGracePeriodSeconds": honoured("kuberuntime: kill after a failed liveness or startup probe"),
	"ProbeHandler.exec":                   honoured("prober"),
	"ProbeHandler.httpGet":                honoured("prober"),
	"ProbeHandler.tcpSocket":              honoured("prober"),
	"ProbeHandler.grpc":                   honoured("prober"),
	"ExecAction.command":                  honoured("prober, hooks"),
	"HTTPGetAction.path":                  honoured("prober, hooks"),
	"HTTPGetAction.port":                  honoured("prober, hooks"),
	"HTTPGetAction.host":                  honoured("prober, hooks"),
	"HTTPGetAction.scheme":                honoured("prober, hooks"),
	"HTTPGetAction.httpHeaders":           honoured("prober, hooks"),
	"HTTPHeader.name":                     honoured("prober, hooks"),
	"HTTPHeader.value":                    honoured("prober, hooks"),
	"TCPSocketAction.port":                honoured("prober, hooks"),
	"TCPSocketAction.host":                honoured("prober, hooks"),
	"GRPCAction.port":                     honoured("prober"),
	"GRPCAction.service":                  honoured("prober"),
	"Lifecycle.postStart":                 honoured("prober.RunHook"),
	"Lifecycle.preStop":                   honoured("prober.RunHook"),
	"Lifecycle.stopSignal":                honoured("CRI stop signal"),
	"LifecycleHandler.exec":               honoured("prober.RunHook"),
	"LifecycleHandler.httpGet":            honoured("prober.RunHook"),
	"LifecycleHandler.tcpSocket":          honoured("prober.RunHook"),
	"LifecycleHandler.sleep":              honoured("prober.RunHook"),
	"SleepAction.seconds":                 honoured("prober.RunHook"),

	// SecurityContext.
	"SecurityContext.capabilities":             honoured("criconfig"),
	"SecurityContext.privileged":               honoured("criconfig"),
	"SecurityContext.seLinuxOptions":           honoured("criconfig"),
	"SecurityContext.windowsOptions":           delegated("Windows only; ignored on Linux as upstream"),
	"SecurityContext.runAsUser":                honoured("criconfig"),
	"SecurityContext.runAsGroup":               honoured("criconfig"),
	"SecurityContext.runAsNonRoot":             honoured("criconfig: CreateContainerConfigError for root"),
	"SecurityContext.readOnlyRootFilesystem":   honoured("criconfig"),
	"SecurityContext.allowPrivilegeEscalation": honoured("criconfig: no_new_privs"),
	"SecurityContext.procMount":                honoured("criconfig: masked and read-only paths"),
	"SecurityContext.seccompProfile":           honoured("criconfig"),
	"SecurityContext.appArmorProfile":          honoured("criconfig"),
	"Capabilities.add":                         honoured("criconfig"),
	"Capabilities.drop":                        honoured("criconfig"),

	// Volumes.
	"Volume.name":                                     honoured("volume manager"),
	"VolumeSource.hostPath":                           honoured("volume manager, with the type check"),
	"VolumeSource.emptyDir":                           honoured("volume manager: disk or tmpfs (a HugePages medium fails with FailedMount)"),
	"VolumeSource.secret":                             honoured("volume manager, tmpfs"),
	"VolumeSource.configMap":                          honoured("volume manager"),
	"VolumeSource.downwardAPI":                        honoured("volume manager, tmpfs"),
	"VolumeSource.projected":                          honoured("volume manager, tmpfs"),
	"VolumeSource.gcePersistentDisk":                  unsupportedVolume,
	"VolumeSource.awsElasticBlockStore":               unsupportedVolume,
	"VolumeSource.gitRepo":                            waits("upstream disabled gitRepo (GitRepoVolumeDriver off): FailedMount, the pod waits"),
	"VolumeSource.nfs":                                unsupportedVolume,
	"VolumeSource.iscsi":                              unsupportedVolume,
	"VolumeSource.glusterfs":                          unsupportedVolume,
	"VolumeSource.persistentVolumeClaim":              whole("volume manager: the claim's PersistentVolume (csi, local, hostPath; other sources FailedMount)"),
	"VolumeSource.rbd":                                unsupportedVolume,
	"VolumeSource.flexVolume":                         unsupportedVolume,
	"VolumeSource.cinder":                             unsupportedVolume,
	"VolumeSource.cephfs":                             unsupportedVolume,
	"VolumeSource.flocker":                            unsupportedVolume,
	"VolumeSource.fc":                                 unsupportedVolume,
	"VolumeSource.azureFile":                          unsupportedVolume,
	"VolumeSource.vsphereVolume":                      unsupportedVolume,
	"VolumeSource.quobyte":                            unsupportedVolume,
	"VolumeSource.azureDisk":                          unsupportedVolume,
	"VolumeSource.photonPersistentDisk":               unsupportedVolume,
	"VolumeSource.portworxVolume":                     unsupportedVolume,
	"VolumeSource.scaleIO":                            unsupportedVolume,
	"VolumeSource.storageos":                          unsupportedVolume,
	"VolumeSource.csi":                                whole("CSI node side: inline ephemeral volumes"),
	"VolumeSource.ephemeral":                          whole("volume manager: the claim kube-controller-manager creates from the template"),
	"VolumeSource.image":                              whole("image volumes through the CRI (FailedMount where the runtime cannot)"),
	"HostPathVolumeSource.path":                       honoured("volume manager"),
	"HostPathVolumeSource.type":                       honoured("volume manager type check"),
	"EmptyDirVolumeSource.medium":                     honoured("volume manager"),
	"EmptyDirVolumeSource.sizeLimit":                  honoured("tmpfs size, eviction"),
	"SecretVolumeSource.secretName":                   honoured("volume manager"),
	"SecretVolumeSource.items":                        honoured("volume manager"),
	"SecretVolumeSource.defaultMode":                  honoured("volume manager"),
	"SecretVolumeSource.optional":                     honoured("volume manager"),
	"ConfigMapVolumeSource.items":                     honoured("volume manager"),
	"ConfigMapVolumeSource.defaultMode":               honoured("volume manager"),
	"ConfigMapVolumeSource.optional":                  honoured("volume manager"),
	"DownwardAPIVolumeSource.items":                   honoured("volume manager"),
	"DownwardAPIVolumeSource.defaultMode":             honoured("volume manager"),
	"DownwardAPIVolumeFile.path":                      honoured("volume manager"),
	"DownwardAPIVolumeFile.fieldRef":                  honoured("volume manager"),
	"DownwardAPIVolumeFile.resourceFieldRef":          honoured("volume manager"),
	"DownwardAPIVolumeFile.mode":                      honoured("volume manager"),
	"KeyToPath.key":                                   honoured("volume manager"),
	"KeyToPath.path":                                  honoured("volume manager"),
	"KeyToPath.mode":                                  honoured("volume manager"),
	"ProjectedVolumeSource.sources":                   honoured("volume manager"),
	"ProjectedVolumeSource.defaultMode":               honoured("volume manager"),
	"VolumeProjection.secret":                         honoured("volume manager"),
	"VolumeProjection.downwardAPI":                    honoured("volume manager"),
	"VolumeProjection.configMap":                      honoured("volume manager"),
	"VolumeProjection.serviceAccountToken":            honoured("podinputs tokens (cluster mode)"),
	"VolumeProjection.clusterTrustBundle":             warned("not implemented: the volume is published without it (FailedMount when it is the only source)"),
	"VolumeProjection.podCertificate":                 warned("not implemented: the volume is published without it (FailedMount when it is the only source)"),
	"SecretProjection.items":                          honoured("volume manager"),
	"SecretProjection.optional":                       honoured("volume manager"),
	"ConfigMapProjection.items":                       honoured("volume manager"),
	"ConfigMapProjection.optional":                    honoured("volume manager"),
	"DownwardAPIProjection.items":                     honoured("volume manager"),
	"ServiceAccountTokenProjection.audience":          honoured("podinputs tokens"),
	"ServiceAccountTokenProjection.expirationSeconds": honoured("podinputs tokens"),
	"ServiceAccountTokenProjection.path":              honoured("volume manager"),
})

// Overrides classify a field differently where it sits, keyed by its path
// with indices left out; they win over Fields.
var Overrides = map[string]Field{
	"spec.containers[].restartPolicy": warned("a regular container's own restart policy is not implemented: the pod's restartPolicy applies"),
}

// withEphemeral gives EphemeralContainerCommon the classification of
// Container: the API server copies one into the other field for field.
func withEphemeral(m map[string]Field) map[string]Field {
	for k, f := range m {
		if name, ok := strings.CutPrefix(k, "Container."); ok {
			m["EphemeralContainerCommon."+name] = f
		}
	}
	return m
}

// Finding is a set pod field the kubelet does not act on, or acts on by
// refusing the pod.
type Finding struct {
	// Path names the field as the API does: spec.containers[0].restartPolicyRules.
	Path string
	Field
}

// String is the path and what happens, for events.
func (f Finding) String() string {
	switch f.Class {
	case Waits:
		return f.Path + " (the pod waits: " + f.Note + ")"
	case Warned:
		return f.Path + " (ignored: " + f.Note + ")"
	}
	return f.Path + " (" + f.Note + ")"
}

// Unsupported returns the fields of pod that are set but not acted on
// (Waits and Warned), in the order of the spec. It is pure.
func Unsupported(pod *v1.Pod) []Finding {
	return findings(pod, func(c Class) bool { return c == Waits || c == Warned })
}

// Rejection returns the first Rejected field pod sets, as an admission
// verdict; ok is false when there is none. It is pure.
func Rejection(pod *v1.Pod) (reason, message string, rejected bool) {
	found := findings(pod, func(c Class) bool { return c == Rejected })
	if len(found) == 0 {
		return "", "", false
	}
	f := found[0]
	return f.Reason, fmt.Sprintf("Pod sets %s, which this kubelet does not support: %s", f.Path, f.Note), true
}

// findings walks pod.Spec along Fields and returns the set fields whose
// class want selects.
func findings(pod *v1.Pod, want func(Class) bool) []Finding {
	var out []Finding
	walkStruct("spec", reflect.ValueOf(pod.Spec), func(path string, f Field) {
		if want(f.Class) {
			out = append(out, Finding{Path: path, Field: f})
		}
	})
	return out
}

// walkStruct visits the set fields of the struct v (a core/v1 type) found
// in Fields, descending into Honoured ones.
func walkStruct(path string, v reflect.Value, visit func(string, Field)) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf, fv := t.Field(i), v.Field(i)
		if sf.Anonymous {
			walkStruct(path, fv, visit)
			continue
		}
		name := JSONName(sf)
		p := path + "." + name
		f, ok := Overrides[schemaPath(p)]
		if !ok {
			f, ok = Fields[t.Name()+"."+name]
		}
		if !ok || !isSet(fv) {
			continue
		}
		if f.Class != Honoured {
			visit(p, f)
			continue
		}
		if !f.Whole {
			walkValue(p, fv, visit)
		}
	}
}

// walkValue descends into a field's value: through pointers, into each
// element of a slice, into structs.
func walkValue(path string, v reflect.Value, visit func(string, Field)) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			walkValue(path, v.Elem(), visit)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			walkValue(fmt.Sprintf("%s[%d]", path, i), v.Index(i), visit)
		}
	case reflect.Struct:
		if v.Type().PkgPath() == corev1Path {
			walkStruct(path, v, visit)
		}
	}
}

// schemaPath is path without its indices: spec.containers[0].tty becomes
// spec.containers[].tty.
func schemaPath(path string) string {
	var b strings.Builder
	skip := false
	for _, r := range path {
		switch {
		case r == '[':
			b.WriteString("[]")
			skip = true
		case r == ']':
			skip = false
		case !skip:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// corev1Path is the package of the classified types.
var corev1Path = reflect.TypeOf(v1.PodSpec{}).PkgPath()

// isSet: a non-zero value; an empty slice or map counts as unset.
func isSet(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		return v.Len() > 0
	}
	return !v.IsZero()
}

// JSONName is a struct field's name in the API (its json tag).
func JSONName(sf reflect.StructField) string {
	name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
	if name == "" {
		return sf.Name
	}
	return name
}
