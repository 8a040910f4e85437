"""Runners: what agent runners see and do.

Bearer tokens, the tokenizer, prompt assembly (injection, pure) and the files it draws from
(context), the pre/post/tool/error hooks with their policy and proposals, idempotency keys,
runner S3 credentials, and the JSON API over all of it. Imports memory and the foundation.
"""
