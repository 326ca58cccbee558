-- Activities, loaded incrementally: each run adds the activities newer than
-- the newest one already loaded and replaces rows with the same activity_id.
{{ config(materialized='incremental', unique_key='activity_id', incremental_strategy='delete+insert') }}

select
    activity_id,
    account_id,
    kind,
    occurred_at
from {{ source('crm', 'activities') }}
{% if is_incremental() %}
where occurred_at > (select max(occurred_at) from {{ this }})
{% endif %}
