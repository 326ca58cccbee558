select
    opportunity_id,
    account_id,
    lower(stage) as stage,
    close_date,
    amount
from {{ source('crm', 'opportunities') }}
where amount is not null
