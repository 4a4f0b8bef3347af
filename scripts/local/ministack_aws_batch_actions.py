# Runs MiniStack with its IAM enforcement (AUTH=true) authorizing SQS batch calls as AWS does.
# AWS authorizes SendMessageBatch, DeleteMessageBatch and ChangeMessageVisibilityBatch as
# sqs:SendMessage, sqs:DeleteMessage and sqs:ChangeMessageVisibility (there is no IAM action of the
# batch's own name); MiniStack checks the batch's name, so a function granted exactly what AWS needs
# is refused there. This maps the three back, and changes nothing else (decision 0066).
import ministack.core.iam_actions as iam_actions
from ministack.app import main

_AS_AWS_AUTHORIZES = {
    "sqs:SendMessageBatch": "sqs:SendMessage",
    "sqs:DeleteMessageBatch": "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibilityBatch": "sqs:ChangeMessageVisibility",
}
_extract_iam_action = iam_actions.extract_iam_action


def _extract_as_aws(*args, **kwargs):
    action = _extract_iam_action(*args, **kwargs)
    return _AS_AWS_AUTHORIZES.get(action, action)


# MiniStack imports the function from its module at each request, so the module's name is enough.
iam_actions.extract_iam_action = _extract_as_aws
main()
