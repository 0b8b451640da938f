package temporal

import (
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// NewWorker registers the session workflow and the activities on a task
// queue. Several workers may share the queue; any of them can run any session.
func NewWorker(c client.Client, queue string, acts *Activities) worker.Worker {
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(SessionWorkflow, workflow.RegisterOptions{Name: WorkflowName})
	w.RegisterActivity(acts)
	return w
}
