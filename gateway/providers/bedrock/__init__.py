"""Claude on Amazon Bedrock: InvokeModelWithResponseStream, SigV4, the AWS event stream."""
