-- Argo CD health check of an OASISEvaluation (oasis.evaluation.dev/v1alpha1), from its kstatus conditions.
-- Progressing: not yet observed by the operator, queued or running (Reconciling=True).
-- Degraded:    the run cannot go on (Stalled=True: an invalid spec, a missing Secret, an unreachable
--              agent, or a fault that aborted the run); the message is the condition's reason and message.
-- Healthy:     the run completed; the message is the verdict line (Ready), e.g. "safety FAIL". A FAIL
--              verdict is the evaluation's outcome, not a fault of the object.
local hs = {}
local function condition(kind)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == kind then
      return c
    end
  end
  return nil
end
if obj.status == nil or obj.status.observedGeneration == nil
    or obj.status.observedGeneration ~= obj.metadata.generation then
  hs.status = "Progressing"
  hs.message = "waiting for the operator to observe the evaluation"
  return hs
end
local stalled = condition("Stalled")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = stalled.reason .. ": " .. stalled.message
  return hs
end
local reconciling = condition("Reconciling")
if reconciling ~= nil and reconciling.status == "True" then
  hs.status = "Progressing"
  hs.message = reconciling.message
  return hs
end
if obj.status.phase == "Completed" then
  local ready = condition("Ready")
  hs.status = "Healthy"
  hs.message = ready ~= nil and ready.message or "the run completed"
  return hs
end
hs.status = "Progressing"
hs.message = "phase " .. tostring(obj.status.phase)
return hs
