package labels

// podLabels are the labels every container of a pod carries.
func podLabels(uid, namespace, name, hash, source string) map[string]string {
	return map[string]string{
		labels.PodUID:       uid,
		labels.PodNamespace: namespace,
		labels.PodName:      name,
		labels.PodHash:      hash,
		labels.Source:       source,
	}
}
