"""User text reaches each chat platform as text, never as its markup (issue 22, item 7).

A member's name is put into `approval_needed` and posted to a lab channel of each kind; what the
local receiver got is read with each platform's documented rules, implemented here from the
documentation (not from labgpu.chat.kinds):

- Slack (https://api.slack.com/reference/surfaces/formatting#escaping): `&`, `<`, `>` are control
  characters; `<!channel>`, `<!here>`, `<!everyone>`, `<!subteam^…>` ping, `<@U…>` mentions,
  `<url|label>` links under a label; `&amp;`, `&lt;`, `&gt;` show as the characters.
- Feishu / Lark custom bot (https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot,
  text content https://open.feishu.cn/document/ukTMukTMukTM/uUjNz4SN2MjL1YzM): a `text`
  message's `<at user_id="all"></at>` pings everyone; a `post` (rich text) is a list of tagged
  elements where only an `at` element mentions and an `a` element links, and a `text` element's
  text is shown as it is (`un_escape` false).
- DingTalk robot (https://open.dingtalk.com/document/orgapp/custom-robot-access): a `text`
  message mentions only whom its `at` field lists (`isAtAll`, `atMobiles`, `atUserIds`); its
  content is not markdown (a `markdown` message's would be).
- WeCom group bot (https://developer.work.weixin.qq.com/document/path/91770): a `text` message
  mentions only whom `mentioned_list` / `mentioned_mobile_list` name (`@all` among them); a
  `markdown` message's `<@userid>` and `[label](url)` would.
"""

import html
import re

import pytest

from labgpu.accounts.tests.factories import UserFactory
from labgpu.bookings import notifications
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.chat import services
from labgpu.chat.tests.receiver import receiver

pytestmark = pytest.mark.security

HOSTILE_NAME = (
    '<!channel> <https://evil.example|x> <at user_id="all"></at> [y](https://evil.example)'
)


def slack_render(payload: dict) -> tuple[str, list[str], list[str]]:
    text = payload["text"]
    mentions, links = [], []
    for sequence in re.findall(r"<([^<>]*)>", text):
        if sequence.startswith(("!", "@", "#")):
            mentions.append(sequence)
        else:
            links.append(sequence)
    shown = re.sub(r"<[^<>]*>", "", text)
    return shown.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"), mentions, links


def feishu_render(payload: dict) -> tuple[str, list[str], list[str]]:
    if payload["msg_type"] == "text":
        text = payload["content"]["text"]
        mentions = re.findall(r"<at [^>]*>", text)
        return re.sub(r"<at [^>]*>.*?</at>", "", text), mentions, []
    assert payload["msg_type"] == "post"
    shown, mentions, links = [], [], []
    for post in payload["content"]["post"].values():
        shown.append(post.get("title", ""))
        for paragraph in post["content"]:
            for element in paragraph:
                if element["tag"] == "at":
                    mentions.append(element["user_id"])
                elif element["tag"] == "a":
                    links.append(element["href"])
                elif element["tag"] == "text":
                    assert not element.get("un_escape")
                    shown.append(element["text"])
    return "\n".join(shown), mentions, links


def dingtalk_render(payload: dict) -> tuple[str, list[str], list[str]]:
    assert payload["msgtype"] == "text", "markdown would render [label](url) links"
    at = payload.get("at") or {}
    mentions = [*at.get("atMobiles", []), *at.get("atUserIds", [])]
    mentions += ["all"] if at.get("isAtAll") else []
    return payload["text"]["content"], mentions, []


def wecom_render(payload: dict) -> tuple[str, list[str], list[str]]:
    assert payload["msgtype"] == "text", "markdown would render <@userid> and links"
    text = payload["text"]
    mentions = [*text.get("mentioned_list", []), *text.get("mentioned_mobile_list", [])]
    return text["content"], mentions, []


RENDER = {
    "slack": ("/services/T0/B0/XYZ", slack_render),
    "feishu": ("/open-apis/bot/v2/hook/h", feishu_render),
    "dingtalk": ("/robot/send?access_token=t", dingtalk_render),
    "wecom": ("/cgi-bin/webhook/send?key=k", wecom_render),
}


@pytest.mark.parametrize("kind", sorted(RENDER))
def test_a_members_name_is_text_on_every_platform_never_a_ping_or_a_link(
    kind, bob, vision_lab, settings
):
    settings.LABGPU_CHAT_ALLOW_LOOPBACK = True
    mallet = UserFactory(username="mallet", first_name=HOSTILE_NAME, last_name="")
    vision_lab.memberships.create(user=mallet)
    path, render = RENDER[kind]
    with receiver() as sink:
        services.channel_create(
            actor=bob, kind=kind, name=kind, url=f"{sink.base_url}{path}", lab=vision_lab
        )
        booking = BookingFactory(user=mallet, lab=vision_lab, status="pending")
        notifications.booking_approval_needed(booking)
        for delivery in vision_lab.chat_channels.get().deliveries.all():
            services.delivery_attempt(delivery_id=delivery.pk)
        (request,) = sink.requests
    shown, mentions, links = render(request.json())
    assert mentions == []
    assert links == []
    assert HOSTILE_NAME in shown  # the name reads as typed
    assert f"#{booking.pk}" in shown


def test_slacks_three_control_characters_are_escaped_and_nothing_else():
    from labgpu.chat.kinds import slack_escape

    assert slack_escape("a & b <c> 'd' \"e\"") == "a &amp; b &lt;c&gt; 'd' \"e\""
    assert html.unescape(slack_escape(HOSTILE_NAME)) == HOSTILE_NAME
