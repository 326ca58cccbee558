-- A singular test: no account has negative won pipeline.
select account_id from {{ ref('account_pipeline') }} where won_amount < 0
