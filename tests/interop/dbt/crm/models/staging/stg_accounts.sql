select
    account_id,
    name as account_name,
    industry,
    country,
    region,
    coalesce(annual_revenue, 0) as annual_revenue
from {{ source('crm', 'accounts') }}
