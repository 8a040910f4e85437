from django import template

register = template.Library()


@register.simple_tag(takes_context=True)
def page_query(context, number) -> str:
    """The current query string with `page` replaced, so pagination keeps filters."""
    query = context["request"].GET.copy()
    query["page"] = number
    return "?" + query.urlencode()
